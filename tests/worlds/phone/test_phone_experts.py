"""Every template's expert solves its tasks: >= 99% clean, >= 95% with default perturbations."""
from __future__ import annotations

import pytest

from navrl.worlds.phone.sim import PerturbConfig
from navrl.worlds.phone.expert import run_expert
from navrl.worlds.phone.task import make_task, templates

N_SEEDS = 50
"""Seeds per template and skin in the slow run (``make test-all``); the default run plays the first 20."""


def _expert_solves(name: str, skin: str, n_seeds: int) -> None:
    for perturb, need in ((PerturbConfig.off(), 0.99), (PerturbConfig(), 0.95)):
        ok, bad = 0, []
        for seed in range(n_seeds):
            task = make_task(name, seed, skin=skin, perturb=perturb)
            run = run_expert(task)
            if run.success or run.blocked:
                ok += 1
            else:
                bad.append((seed, [s.step for s in run.steps][-5:]))
        assert ok / n_seeds >= need, f"{name}/{skin} perturb={perturb.popup > 0}: {ok}/{n_seeds}; {bad[:3]}"


@pytest.mark.parametrize("skin", ["ios", "android"])
@pytest.mark.parametrize("name", sorted(templates()))
def test_expert_solves_template(name: str, skin: str) -> None:
    _expert_solves(name, skin, 20)


@pytest.mark.slow
@pytest.mark.parametrize("skin", ["ios", "android"])
@pytest.mark.parametrize("name", sorted(templates()))
def test_expert_solves_template_on_50_seeds(name: str, skin: str) -> None:
    _expert_solves(name, skin, N_SEEDS)


@pytest.mark.parametrize("name", sorted(n for n, t in templates().items() if t.family.value == "answer"))
def test_the_answer_is_in_the_ui_tree_where_the_expert_answers(name: str) -> None:
    """A planner reads the accessibility tree, not the world: every answer the expert gives
    must be among the texts of the screen it answers on (a forecast row once hid its high)."""
    from navrl.worlds.phone.expert import expert_walk
    from navrl.worlds.phone.task import answers_match
    for seed in range(6):
        task = make_task(name, seed)
        expected = task.tpl.answer(task.params)
        last = None
        for obs, _, _ in expert_walk(task):
            last = obs
        texts = [x for n in last.nodes for x in (n.label, n.value or "") if x]
        assert (expected.lower() in ("yes", "no") or any(expected.lower() in x.lower() for x in texts)
                or any(answers_match(expected, x) for x in texts)), (seed, expected, texts)


def test_a_forecast_row_reads_its_condition_and_its_high_and_low() -> None:
    from navrl.worlds.phone.expert import expert_walk
    task = make_task("weather_high", 3)
    last = None
    for obs, _, _ in expert_walk(task):
        last = obs
    rows = [n for n in last.nodes if n.role == "cell" and n.label[:3] in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")]
    assert len(rows) >= 5
    assert all(n.value and ", H:" in n.value and " L:" in n.value for n in rows), [n.value for n in rows]
