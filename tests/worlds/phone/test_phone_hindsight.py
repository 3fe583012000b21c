"""Hindsight relabelling in the phone world: an episode that did another task of its template
than the one it was given is relabelled with that task's goal, which the template's own checker
accepts on the episode's last world and rejects on its first; nothing else is relabelled."""
from __future__ import annotations

import random

import pytest

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import Planner, PlannerOutput
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.tasks.task import hindsight_of
from navrl.tasks.user import ProfileUser
from navrl.worlds.phone.expert import Memory, expert_step, intent_action
from navrl.worlds.phone.judges import OracleJudge
from navrl.worlds.phone.task import get_template, make_task

RELABELLED = ["mail_send", "messages_send", "notes_create", "multi_contact_email", "multi_note_to_message",
              "email_food_total"]


def other_task(task, k: int = 0):
    """The same world and seed with another goal of the template: ``task``'s own planted data kept
    (email_food_total's order: the other goal emails the same total, to someone else)."""
    tpl = get_template(task.template)
    for i in range(50):
        p = tpl.sample(random.Random(f"other/{task.template}/{k}/{i}"))
        if task.template == "email_food_total":
            p = {**p, **{key: task.params[key] for key in ("restaurant", "items", "total")}}
        if tpl.goal(p) != task.goal:
            return task.with_(id=f"{task.id}/other{k}", params=p, goal=tpl.goal(p), profile=tpl.profile(p))
    raise AssertionError("no other goal")


def play(task, expert_of):
    """``expert_of``'s expert playing on a fresh world of ``task``, to its declared completion."""
    world, mem, user = task.make_device(), Memory(), ProfileUser()
    for _ in range(expert_of.max_steps):
        s = expert_step(expert_of, world, mem)
        if s.intent[0] == "complete":
            return world
        if s.intent[0] == "ask":
            mem.qa.append((s.intent[1], user.answer(expert_of, s.intent[1])))
            continue
        world.act(intent_action(world.observe(), s.intent))
    raise AssertionError("the expert did not finish")


@pytest.mark.parametrize("template", RELABELLED)
def test_an_episode_that_did_another_task_is_relabelled_with_that_goal(template):
    task = make_task(template, 3, suite="train")
    other = other_task(task)
    world = play(task, other)
    assert not task.check(world)                       # the episode failed its own goal
    got = hindsight_of(task, world.snapshot(), None)
    assert got is not None
    assert got.goal == other.goal and got.params == other.params and got.id == task.id + "+hindsight"
    # the task's own checker accepts the relabelled goal on the episode's last world, not on its first
    assert got.check(world) and not got.check(task.make_device())
    assert (got.template, got.seed, got.skin) == (task.template, task.seed, task.skin)


@pytest.mark.parametrize("template", RELABELLED)
def test_an_episode_that_reached_its_own_goal_or_did_nothing_is_not_relabelled(template):
    task = make_task(template, 5, suite="train")
    done = play(task, task)
    assert task.check(done)
    assert task.hindsight(done.snapshot()) is None        # its own goal: nothing to relabel
    assert task.hindsight(task.make_device().snapshot()) is None    # nothing changed: no goal reached


def test_a_template_without_the_hook_and_a_missing_snapshot_give_nothing():
    task = make_task("mail_delete", 1, suite="train")
    world = play(task, task)
    assert task.hindsight(world.snapshot()) is None
    assert hindsight_of(make_task("mail_send", 1), None, None) is None
    assert hindsight_of(object(), b"anything", None) is None     # a world whose tasks have no hook


def test_a_message_that_carries_no_one_elses_address_is_not_relabelled():
    task = make_task("multi_contact_email", 2, suite="train")
    wrong = make_task("messages_send", 2, suite="train")     # sends a stock text to someone: no address in it
    world = play(task, wrong)
    assert not task.check(world)
    assert task.hindsight(world.snapshot()) is None


class OtherGoal(Planner):
    """Plays the expert of another task of the same world (a planner that misread its goal)."""

    def __init__(self, others: dict):
        self.others = others

    def plan(self, contexts):
        return [PlannerOutput(self.others[c.task.id].expert_step(c.obs, c.device, list(c.answers))) for c in contexts]


@pytest.mark.parametrize("hindsight", [True, False])
def test_the_runner_records_the_reached_goal_of_a_failed_completion(hindsight):
    tasks = [make_task("mail_send", 7, suite="train"), make_task("notes_create", 8, suite="train"),
             make_task("mail_delete", 9, suite="train")]
    others = {t.id: other_task(t) if t.template != "mail_delete" else t for t in tasks}
    judge = OracleJudge()
    runner = EpisodeRunner(OtherGoal(others), AccessibilityGrounder(), judge, judge, judge,
                           config=RunnerConfig(hindsight=hindsight))
    trajs = runner.run(tasks)
    assert [t.success for t in trajs] == [False, False, True]
    assert [t.end for t in trajs] == ["complete"] * 3
    got = [t.info.get("hindsight") for t in trajs]
    if hindsight:
        assert [g["goal"] for g in got[:2]] == [others[t.id].goal for t in tasks[:2]]
        assert got[0]["task"]["id"] == tasks[0].id + "+hindsight"
        assert got[2] is None                                  # a success is not relabelled
    else:
        assert got == [None, None, None]


def test_a_goal_the_first_world_already_met_is_refused(monkeypatch):
    """The guard is the template's own checker: a hook that names a goal already true at the start
    (a note that was there before the episode) or false at the end is not taken at its word."""
    task = make_task("notes_create", 4, suite="train")
    other = other_task(task)
    world = play(task, other)
    old = task.make_device().state.data["Notes"]["notes"][0]
    tpl = type(get_template("notes_create"))
    monkeypatch.setattr(tpl, "achieved", lambda self, start, end, p, answer: {"title": old["title"], "body": old["body"]})
    assert task.hindsight(world.snapshot()) is None
    monkeypatch.setattr(tpl, "achieved", lambda self, start, end, p, answer: {"title": "Never", "body": "written"})
    assert task.hindsight(world.snapshot()) is None
    monkeypatch.setattr(tpl, "achieved", lambda self, start, end, p, answer: dict(other.params))
    assert task.hindsight(world.snapshot()).goal == other.goal
