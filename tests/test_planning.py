"""The planner protocol's records (PlannerOutput, Memory) have one home, navrl.planning."""
from __future__ import annotations

from types import SimpleNamespace

from navrl import planning


def test_old_names_are_the_same_classes() -> None:
    from navrl.agent.planner import PlannerOutput
    from navrl.tasks.expert import Memory
    assert PlannerOutput is planning.PlannerOutput
    assert Memory is planning.Memory


def test_scripted_web_planner_returns_planner_outputs() -> None:
    from navrl.tasks.web import ScriptedWebPlanner
    # a page that reports itself done: the script declares completion without a template
    ctx = SimpleNamespace(task=SimpleNamespace(template="-", goal="-"), obs=SimpleNamespace(page={"done": True}))
    (out,) = ScriptedWebPlanner().plan([ctx])
    assert type(out) is planning.PlannerOutput
    assert out.text == "Reasoning: The page reports the task finished.\nStep: Complete\nRemaining: nothing; the task is done"
    assert out.token_ids is None and out.usage == {}


def test_memory_copy_is_independent() -> None:
    m = planning.Memory([("Which size?", "M")])
    c = m.copy()
    c.qa.append(("Colour?", "red"))
    assert m.answers() == ["M"] and c.answers() == ["M", "red"]
