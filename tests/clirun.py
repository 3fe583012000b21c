"""``run_navrl``: ``navrl ARGS`` inside the test's own interpreter: the command's ``main`` with
stdout / stderr captured, the environment and working directory it is given, and its exit code
(argparse's exits included) — what ``python -m navrl ARGS`` returns, without starting a new
interpreter and importing torch again for each command (~3 s of CPU each). A handful of tests
still start the real process (``--version``, the refused commands of
``tests/cli/test_bad_input_table.py``, Gymnasium in a fresh interpreter): that path is checked
there, and everything else is the same ``main``.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path


def run_navrl(*args: str, env: dict[str, str] | None = None, cwd: Path | str | None = None,
              timeout: float | None = None) -> subprocess.CompletedProcess:
    """``navrl ARGS`` in this interpreter, as a ``CompletedProcess`` (``timeout`` is accepted for
    call sites written for ``subprocess.run`` and not enforced)."""
    from navrl.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main([str(a) for a in args])
            except SystemExit as e:        # argparse's refusals exit 2, --version exits 0
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["navrl", *args], rc, out.getvalue(), err.getvalue())
