"""How an episode ended decides what its terminal judge may say and what it pays (docs/design.md
§4a): a declared completion or the world's own end (``done``) is judged on its merits; running out
of steps and infrastructure failure are not."""
from __future__ import annotations

import pytest

from navrl.judge.base import TerminalContext, undeclared_end
from navrl.judge.rewards import CAUTIONARY_REWARDS, DEFAULT_REWARDS
from navrl.judge.verdicts import EndReason, TerminalVerdict

S, F, B = TerminalVerdict.SUCCESS, TerminalVerdict.FAIL, TerminalVerdict.BLOCKED_COMPLETE


def test_finished_ends_are_the_declared_completion_and_the_worlds_end():
    assert {e for e in EndReason if e.finished} == {EndReason.COMPLETE, EndReason.DONE}


@pytest.mark.parametrize("rewards", [DEFAULT_REWARDS, CAUTIONARY_REWARDS])
def test_the_worlds_end_pays_as_a_declared_completion(rewards):
    for end in (EndReason.COMPLETE, EndReason.DONE):
        assert rewards.terminal(S, end) == rewards.done_complete
        assert rewards.terminal(B, end) == rewards.blocked_complete
    assert rewards.terminal(F, EndReason.COMPLETE) == rewards.false_complete
    # a wrong end the world reports (MiniWoB++'s -1) pays as running out of steps, never less:
    # stalling until the budget runs out must not pay more than trying
    assert rewards.terminal(F, EndReason.DONE) == rewards.ended_fail == rewards.terminal(F, EndReason.BUDGET)
    assert rewards.terminal(F, EndReason.INVALID) == rewards.terminal(S, EndReason.INVALID) == 0.0   # masked
    with pytest.raises(ValueError, match="needs a declared completion or the world's end"):
        rewards.terminal(S, EndReason.BUDGET)


def test_only_unfinished_ends_fail_without_a_look():
    def ctx(end):
        return TerminalContext(None, end, None, [], [])
    assert undeclared_end(ctx(EndReason.COMPLETE)) is None and undeclared_end(ctx(EndReason.DONE)) is None
    assert undeclared_end(ctx(EndReason.BUDGET)).reason == "step budget exhausted"
    assert undeclared_end(ctx(EndReason.INVALID)).verdict is TerminalVerdict.FAIL


def test_goal_values_are_the_quoted_texts_and_fields_holding_them_are_counted():
    from navrl.observation import Observation, UINode
    from navrl.worlds.web.judges import fields_holding_goal_values, goal_values
    goal = 'Enter the username "Riley" and the password "Vw-dB7" into the text fields and press "login".'
    assert goal_values(goal) == {"riley", "vw db7", "login"} and goal_values("Click the button.") == frozenset()
    nodes = (UINode("1", "textfield", "Username", (0, 0, 10, 10), value="riley"),
             UINode("2", "textfield", "Password", (0, 10, 10, 20), value="Vw-dB7x"),
             UINode("3", "button", "login", (0, 20, 10, 30), value="login"))
    obs = Observation(nodes, "web", (160, 210), "web")
    assert fields_holding_goal_values(goal, obs) == 1          # a button's text is no field's value
    assert fields_holding_goal_values(goal, None) == 0 == fields_holding_goal_values("Click it.", obs)
