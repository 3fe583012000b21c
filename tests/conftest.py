"""Shared test set-up. ``tests/`` is on ``sys.path`` because this file is here (pytest's default
import mode), so a test module can ``from clirun import run_navrl``."""
from __future__ import annotations


def pytest_configure(config):
    """One torch thread per test process, as the trainer sets (``run.torch_threads``): results do
    not depend on which test ran first in a process, and two pytest-xdist workers on two cores
    do not oversubscribe them."""
    import torch
    torch.set_num_threads(1)
