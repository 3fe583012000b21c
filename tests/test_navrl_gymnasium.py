"""``_navrl_gymnasium``: the start-up hook that registers navrl's Gymnasium ids when gymnasium is
imported (its fresh-interpreter ``gymnasium.make`` is tests/cli/test_first_hour.py's)."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import _navrl_gymnasium as hook

SRC = Path(__file__).resolve().parents[1] / "src"
PTH, HOOK = SRC / "_navrl_gymnasium.pth", SRC / "_navrl_gymnasium.py"
COUNT_FINDERS = "sum(getattr(f, 'navrl_gymnasium_hook', False) for f in sys.meta_path)"


def test_start_up_installs_the_finder_and_imports_nothing_heavy():
    """A new interpreter of this environment: the installed .pth ran, and imported nothing."""
    heavy = ("gymnasium", "numpy", "torch", "navrl", "_navrl_gymnasium")
    code = f"import sys, json; print(json.dumps([[m for m in {heavy!r} if m in sys.modules], {COUNT_FINDERS}]))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    loaded, finders = json.loads(r.stdout)
    assert finders == 1, f"_navrl_gymnasium.pth is not installed in {sys.prefix} (pip install -e . again)"
    assert loaded == []


def test_the_pth_runs_the_documented_code():
    lines = [x for x in PTH.read_text().splitlines() if x and not x.startswith("#")]
    assert len(lines) == 1 and lines[0].startswith("import sys; exec(")   # site runs lines that start with import
    call = ast.parse(lines[0]).body[1].value
    assert ast.literal_eval(call.args[0]) == hook.PTH_CODE


GYM = "registry = {}\ndef register(id, entry_point):\n    registry[id] = entry_point\n"   # Gymnasium's API, in small
NOT_GYM = "NAME = 'no registry'\n"


@pytest.mark.parametrize("module, gym, out, err", [
    (HOOK.read_text(), GYM, "1 ['navrl/PhoneWorld-v0'] 0", ""),
    (None, GYM, "1 [] 1", ""),   # navrl's source gone (a deleted editable checkout): gymnasium as without navrl
    ("raise RuntimeError('boom')\n", GYM, "1 [] 1", "navrl: its Gymnasium hook failed (RuntimeError('boom'))"),
    ("ENVS = {}\n", GYM, "1 [] 1", "navrl: its Gymnasium hook failed (AttributeError("),   # another version
    (HOOK.read_text(), NOT_GYM, "1 None 0", "navrl: could not register navrl/PhoneWorld-v0 with Gymnasium"),
], ids=["registers", "module-missing", "module-broken", "module-mismatched", "gymnasium-without-registry"])
def test_the_pth_never_breaks_start_up_nor_gymnasium(tmp_path, module, gym, out, err):
    """The .pth as site runs it from a site directory (twice: once is what counts), then
    ``import gymnasium``; python -S keeps this environment's own site-packages out."""
    (tmp_path / PTH.name).write_text(PTH.read_text())
    if module is not None:
        (tmp_path / HOOK.name).write_text(module)
    (tmp_path / "gymnasium").mkdir()
    (tmp_path / "gymnasium" / "__init__.py").write_text(gym)
    code = (f"import site, sys; site.addsitedir(sys.argv[1]); site.addsitedir(sys.argv[1]); n = {COUNT_FINDERS}; "
            f"import gymnasium; r = getattr(gymnasium, 'registry', None); "
            f"print(n, r if r is None else sorted(r), {COUNT_FINDERS})")
    r = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert (r.returncode, r.stdout) == (0, out + "\n"), r.stderr
    assert r.stderr.count("navrl:") == (1 if err else 0) and err in r.stderr, r.stderr


def test_navrl_registers_the_same_ids():
    import navrl
    assert navrl.PHONE_WORLD_ENV == hook.PHONE_WORLD_ENV == "navrl/PhoneWorld-v0"
    assert hook.ENVS == {"navrl/PhoneWorld-v0": "navrl.worlds.phone.env:PhoneWorldEnv"}
