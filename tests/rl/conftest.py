"""Fixtures the RL tests share: the ``quick`` preset and one SFT run of it per session."""
from __future__ import annotations

import pytest

from navrl.experiments.pipeline import run_sft
from navrl.rl.presets import get_preset


@pytest.fixture(scope="session")
def quick():
    return get_preset("quick")


@pytest.fixture(scope="session")
def quick_sft(quick, tmp_path_factory):
    """(path of the quick preset's sft.pt, its SFTResult): the tiny text planner after SFT."""
    out = tmp_path_factory.mktemp("sft")
    _, res = run_sft(quick, out)
    return out / "sft.pt", res
