"""Every template's expert solves its tasks: >= 99% clean, >= 95% with default perturbations."""
from __future__ import annotations

import pytest

from navrl.device.phone import PerturbConfig
from navrl.tasks.expert import run_expert
from navrl.tasks.spec import make_task, templates

N_SEEDS = 50


@pytest.mark.parametrize("skin", ["ios", "android"])
@pytest.mark.parametrize("name", sorted(templates()))
def test_expert_solves_template(name: str, skin: str) -> None:
    for perturb, need in ((PerturbConfig.off(), 0.99), (PerturbConfig(), 0.95)):
        ok, bad = 0, []
        for seed in range(N_SEEDS):
            task = make_task(name, seed, skin=skin, perturb=perturb)
            run = run_expert(task)
            if run.success or run.blocked:
                ok += 1
            else:
                bad.append((seed, [s.step for s in run.steps][-5:]))
        assert ok / N_SEEDS >= need, f"{name}/{skin} perturb={perturb.popup > 0}: {ok}/{N_SEEDS}; {bad[:3]}"
