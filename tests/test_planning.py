"""The planner protocol's records (PlannerOutput, Memory) have one home, navrl.planning."""
from __future__ import annotations

from types import SimpleNamespace

from navrl import planning


def test_old_names_are_the_same_classes() -> None:
    from navrl.agent.plan import Plan
    from navrl.agent.planner import PlannerOutput
    from navrl.worlds.phone.expert import Memory
    assert Plan is planning.Plan
    assert PlannerOutput is planning.PlannerOutput
    assert Memory is planning.Memory


def test_the_expert_writes_the_plan_block_that_the_parser_reads() -> None:
    from navrl.agent.plan import parse_plan
    from navrl.worlds.phone.expert import ExpertStep
    s = ExpertStep("The list is long.", "Swipe up", "find the order", ("swipe", "up", None))
    assert s.text() == "Reasoning: The list is long.\nStep: Swipe up\nRemaining: find the order"
    assert parse_plan(s.text()) == planning.Plan("The list is long.", "Swipe up", "find the order")


def test_scripted_web_planner_returns_planner_outputs() -> None:
    from navrl.agent.planner import ExpertPlanner
    from navrl.worlds.web.tasks import miniwob_task
    # a page that reports itself done: the script declares completion whatever the task
    task = miniwob_task("click-test", 0)
    ctx = SimpleNamespace(task=task, obs=SimpleNamespace(page={"done": True}), device=None, answers=[])
    (out,) = ExpertPlanner().plan([ctx])
    assert type(out) is planning.PlannerOutput
    assert out.text == ("Reasoning: The page reports the task finished.\nStep: Complete\n"
                        "Remaining: nothing; the task is done")
    assert out.token_ids is None and out.usage == {}


def test_memory_copy_is_independent() -> None:
    m = planning.Memory([("Which size?", "M")])
    c = m.copy()
    c.qa.append(("Colour?", "red"))
    assert m.answers() == ["M"] and c.answers() == ["M", "red"]
