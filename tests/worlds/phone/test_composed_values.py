"""Values a multi-app task's check accepts but its expert's path does not type in one go
(issue #26): the oracle judges must count them as progress, not as detours.

- email_food_total checks only that the sent body carries the order's total: a body that is the
  total alone (what the planner can copy from what QuickBite showed) completes the expert's
  "write the message" stage, one step fewer to go, and the task succeeds;
- multi_maps_drive_event's title is the goal's quoted "Drive to X - " followed by the drive
  time Maps showed: typed as those two values, the first leaves the expert's count where it was
  (it types the rest) and the second takes one step off it, and the task succeeds.
"""
from __future__ import annotations

from navrl.actions import Action
from navrl.planning import Memory
from navrl.worlds.phone.expert import expert_step, intent_action
from navrl.worlds.phone.sim.apps.seed import money
from navrl.worlds.phone.task import make_task


def _to_type_step(task, world, memory, when):
    """Play the expert until its next step is a Type that ``when`` accepts; that step."""
    for _ in range(60):
        s = expert_step(task, world, memory)
        if s.intent[0] == "type" and when(s.intent[1]):
            return s
        world.act(intent_action(world.observe(), s.intent))
    raise AssertionError("the expert never reached the Type step")


def _finish(task, world, memory) -> str | None:
    """Play the expert to its Complete; the answer it gives."""
    for _ in range(60):
        s = expert_step(task, world, memory)
        if s.intent[0] == "complete":
            return s.intent[1]
        world.act(intent_action(world.observe(), s.intent))
    raise AssertionError("the expert never completed")


def test_the_total_alone_as_the_body_is_progress_and_succeeds():
    for seed in range(5):
        task = make_task("email_food_total", seed, suite="train")
        world, memory = task.make_device(), Memory()
        step = _to_type_step(task, world, memory, lambda t: "came to" in t)
        before = world.snapshot().oracle.steps
        total = money(task.params["total"])
        assert step.intent[1] != total          # the expert writes a sentence
        world.act(Action.type(total))
        after = world.snapshot().oracle
        assert after.steps == before - 1
        assert [k for k, _ in after.path] == ["stage", "end"]   # Send, then Complete: no clearing
        answer = _finish(task, world, memory)
        assert task.check(world, answer)


def test_a_body_without_the_total_is_still_a_detour():
    task = make_task("email_food_total", 0, suite="train")
    world, memory = task.make_device(), Memory()
    _to_type_step(task, world, memory, lambda t: "came to" in t)
    before = world.snapshot().oracle.steps
    world.act(Action.type("4.50"))
    assert world.snapshot().oracle.steps == before + 1      # clear, then the sentence


def test_the_title_typed_as_the_quoted_prefix_and_the_drive_time_succeeds():
    for seed in range(5):
        task = make_task("multi_maps_drive_event", seed, suite="train")
        title = task.params["title"]
        prefix = f"Drive to {task.params['to']} - "
        assert f'"{prefix}"' in task.goal and title == prefix + task.params["dur"]
        world, memory = task.make_device(), Memory()
        _to_type_step(task, world, memory, lambda t: t == title)
        n0 = world.snapshot().oracle.steps
        world.act(Action.type(prefix))
        n1 = world.snapshot().oracle.steps
        world.act(Action.type(task.params["dur"]))
        n2 = world.snapshot().oracle.steps
        assert (n1, n2) == (n0, n0 - 1)
        answer = _finish(task, world, memory)
        assert task.check(world, answer)
