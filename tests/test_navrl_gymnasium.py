"""``_navrl_gymnasium``: the start-up hook that registers navrl's Gymnasium ids when gymnasium is
imported (its fresh-interpreter ``gymnasium.make`` is tests/cli/test_first_hour.py's)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import _navrl_gymnasium as hook

SRC = Path(__file__).resolve().parents[1] / "src"
PTH, HOOK = SRC / "_navrl_gymnasium.pth", SRC / "_navrl_gymnasium.py"

HEAVY = ("gymnasium", "numpy", "torch", "navrl")


def python(code: str, *, path_first: str | None = None) -> subprocess.CompletedProcess:
    """``python -c CODE`` in a new interpreter of this environment (its .pth files run)."""
    env = dict(os.environ)
    if path_first:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (path_first, env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


def test_start_up_installs_the_finder_and_imports_nothing_heavy():
    r = python("import sys, json; print(json.dumps([[m for m in %r if m in sys.modules], "
               "sum(getattr(f, 'navrl_gymnasium_hook', False) for f in sys.meta_path)]))" % (HEAVY,))
    assert r.returncode == 0, r.stderr
    loaded, finders = json.loads(r.stdout)
    assert finders == 1, f"_navrl_gymnasium.pth is not installed in {sys.prefix} (pip install -e . again)"
    assert loaded == []


def test_a_gymnasium_it_cannot_register_with_is_one_warning_not_a_failed_import(tmp_path):
    (tmp_path / "gymnasium").mkdir()
    (tmp_path / "gymnasium" / "__init__.py").write_text("NAME = 'not gymnasium'\n")   # no registry
    r = python("import gymnasium; print(gymnasium.NAME)", path_first=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "not gymnasium\n"
    warned = r.stderr.count("navrl: could not register navrl/PhoneWorld-v0 with Gymnasium")
    assert warned == 1, r.stderr or f"no warning: is _navrl_gymnasium.pth installed in {sys.prefix}?"


@pytest.mark.parametrize("module, stderr, finders", [
    (None, "", 0),                                  # navrl's source gone (a deleted editable checkout)
    ("raise RuntimeError('boom')\n", "navrl: its Gymnasium start-up hook failed: RuntimeError('boom')\n", 0),
    (HOOK.read_text(), "", 1),
], ids=["module-missing", "module-broken", "module-there"])
def test_the_pth_line_never_breaks_start_up(tmp_path, module, stderr, finders):
    """The .pth as site runs it from a site directory (python -S: only this one)."""
    (tmp_path / PTH.name).write_text(PTH.read_text())
    if module is not None:
        (tmp_path / HOOK.name).write_text(module)
    code = ("import site, sys; site.addsitedir(sys.argv[1]); "
            "print(sum(getattr(f, 'navrl_gymnasium_hook', False) for f in sys.meta_path))")
    r = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{finders}\n", stderr)


def test_install_is_idempotent_and_registers_at_once_when_gymnasium_is_already_imported(monkeypatch):
    import gymnasium
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(gymnasium.registry, hook.PHONE_WORLD_ENV, raising=False)
    before = list(sys.meta_path)
    hook.install()
    hook.install()
    assert sys.meta_path == before   # gymnasium is imported: nothing to wait for
    assert gymnasium.registry[hook.PHONE_WORLD_ENV].entry_point == hook.ENVS[hook.PHONE_WORLD_ENV]


def test_install_adds_one_finder_however_often_it_runs(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, "gymnasium", raising=False)   # as at start-up (the module object itself is kept)
    n = sum(getattr(f, "navrl_gymnasium_hook", False) for f in sys.meta_path)
    hook.install()
    hook.install()
    assert sum(getattr(f, "navrl_gymnasium_hook", False) for f in sys.meta_path) == max(n, 1)


def test_navrl_registers_the_same_ids():
    import navrl
    assert navrl.PHONE_WORLD_ENV == hook.PHONE_WORLD_ENV == "navrl/PhoneWorld-v0"
    assert hook.ENVS == {"navrl/PhoneWorld-v0": "navrl.worlds.phone.env:PhoneWorldEnv"}
