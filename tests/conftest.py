"""Shared test set-up. ``tests/`` is on ``sys.path`` because this file is here (pytest's default
import mode), so a test module can ``from clirun import run_navrl``."""
from __future__ import annotations

import pytest


def pytest_configure(config):
    """One torch thread per test process, as the trainer sets (``run.torch_threads``): results do
    not depend on which test ran first in a process, and two pytest-xdist workers on two cores
    do not oversubscribe them."""
    import torch
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def quick_pointer_sft(tmp_path_factory, worker_id):
    """The ``quick-pointer`` preset's SFT checkpoint (``sft.pt``), built once per test run: the
    pytest-xdist workers share one copy under the run's base temp folder, the first to need it
    building it under a file lock (the pattern pytest-xdist documents), so the train tests of
    several files do not each spend seconds on the same SFT."""
    from filelock import FileLock

    from navrl.experiments.pipeline import run_sft
    from navrl.rl.presets import get_preset

    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent                  # shared by the workers of this run
    out = root / "quick_pointer_sft"
    with FileLock(str(out) + ".lock"):
        if not (out / "sft.pt").is_file():
            run_sft(get_preset("quick-pointer"), out)
    return out / "sft.pt"
