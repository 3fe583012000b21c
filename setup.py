"""Everything about navrl's build is in pyproject.toml except one file: ``_navrl_gymnasium.pth``,
installed at the root of site-packages so that ``gymnasium.make("navrl/PhoneWorld-v0")`` works
without ``import navrl`` first (src/_navrl_gymnasium.py says how). setuptools has no setting for
a file there, so two commands put it in both kinds of wheel that pip installs from:

- a wheel (``pip install .``, ``pip wheel .``): ``build_pth``, a ``build`` sub-command, copies it
  to the root of ``build_lib``, which becomes the root of the wheel;
- an editable wheel (``pip install -e .``, PEP 660): ``editable_wheel`` does not use
  ``build_lib``'s files, so the file is added to the wheel it made, with its RECORD line.

pip records the installed file, so ``pip uninstall navrl`` removes it.
"""
import base64
import hashlib
import os
import zipfile
from pathlib import Path

from setuptools import Command, setup
from setuptools.command.build import build
from setuptools.command.editable_wheel import editable_wheel

PTH = "src/_navrl_gymnasium.pth"


class build_pth(Command):
    """Copy ``_navrl_gymnasium.pth`` to the root of ``build_lib`` (setuptools' build sub-command
    protocol; in editable mode it does nothing: see ``editable_wheel_pth``)."""

    description = "copy _navrl_gymnasium.pth to the root of build_lib"
    user_options = []

    def initialize_options(self):
        self.build_lib = None
        self.editable_mode = False

    def finalize_options(self):
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def _target(self) -> str:
        return os.path.join(self.build_lib, os.path.basename(PTH))

    def run(self):
        if not self.editable_mode:
            self.copy_file(PTH, self._target())

    def get_source_files(self):
        return [PTH]

    def get_outputs(self):
        return [] if self.editable_mode else [self._target()]

    def get_output_mapping(self):
        return {} if self.editable_mode else {self._target(): PTH}


class build_with_pth(build):
    sub_commands = build.sub_commands + [("build_pth", None)]


class editable_wheel_pth(editable_wheel):
    """setuptools' PEP 660 editable wheel, plus ``_navrl_gymnasium.pth`` at its root."""

    def run(self):
        super().run()
        wheels = list(Path(self.dist_dir).glob("*.editable-*.whl"))
        if len(wheels) != 1:
            raise RuntimeError(f"expected one editable wheel in {self.dist_dir}, found {wheels}")
        add_to_wheel(wheels[0], os.path.basename(PTH), Path(PTH).read_bytes())


def add_to_wheel(wheel: Path, name: str, data: bytes) -> None:
    """Rewrite ``wheel`` with the file ``name`` at its root and a line for it in RECORD."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    tmp = wheel.with_name(wheel.name + ".tmp")
    with zipfile.ZipFile(wheel) as old, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as new:
        if name in old.namelist():
            raise RuntimeError(f"{wheel.name} already has {name}")
        new.writestr(name, data)
        for item in old.infolist():
            content = old.read(item)
            if item.filename.endswith(".dist-info/RECORD"):
                content = content.rstrip(b"\n") + f"\n{name},sha256={digest},{len(data)}\n".encode()
            new.writestr(item, content)
    tmp.replace(wheel)


setup(cmdclass={"build": build_with_pth, "build_pth": build_pth, "editable_wheel": editable_wheel_pth})
