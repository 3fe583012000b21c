"""The oracle's ``progress="best"`` rule: a step is progress only when it takes the expert's
remaining steps below the episode's best so far, so undoing one's own regression earns nothing,
while a regression the world brings between steps does not lower the bar."""
from __future__ import annotations

import pytest

from navrl.judge.base import PastStep
from navrl.worlds.phone.judges import OracleJudge, best_so_far


def _h(*pairs):
    return [PastStep("s", "tap(1, 1)", f"h{i}", "x", p) for i, p in enumerate(pairs)]


def test_best_so_far_by_hand():
    assert best_so_far([], 7) == 7                                    # first step: its own count
    assert best_so_far(_h((7, 6), (6, 5)), 5) == 5                    # plain progress
    # the agent regressed (5 -> 7: typed into the wrong field), then undid one step of it: the bar stays at 5
    assert best_so_far(_h((7, 6), (6, 5), (5, 7), (7, 6)), 6) == 5
    # the world added 2 steps between two steps (a pop-up on the next screen): the bar rises with it
    assert best_so_far(_h((7, 6), (6, 5)), 7) == 7
    # an ask-user answer shortened the count between steps: the bar follows it down
    assert best_so_far(_h((7, 6), (6, 5)), 4) == 4
    # steps a judge counted nothing for (asks) are skipped
    assert best_so_far(_h((7, 6)) + [PastStep("ask", None, "h", "justified")], 6) == 6


def test_undo_loops_earn_nothing_under_best_but_do_under_step():
    """The loop RL found at multi-app junctions (docs/results/exploration.md §13): leave the form
    (5 -> 7), come back (7 -> 6 -> 5), leave again: every return is progress under the design's
    rule, none under ``best``."""
    from navrl.judge.base import StepContext
    from navrl.judge.verdicts import StepVerdict
    from navrl.planning import Memory
    from navrl.actions import Action
    from navrl.worlds.phone.task import make_task
    task = make_task("transfer_shop_receipt", 0)

    class Plan:
        reasoning = ""
    hist = _h((6, 5), (5, 7))

    def ctx():
        return StepContext(task=task, before=type("O", (), {"nodes": []})(), after=None, plan=Plan(),
                           action=Action.tap(1, 1), history=hist, memory=Memory(), screen_hash="z")
    verdicts = {}
    for rule in ("step", "best"):
        j = OracleJudge(progress=rule)
        verdicts[rule] = [j._progress(ctx(), 7, 6).verdict, j._progress(ctx(), 6, 5).verdict,
                          j._progress(ctx(), 5, 4).verdict]
    assert verdicts["step"] == [StepVerdict.SUCCESS] * 3
    # back to 6 and to 5 are undoing; 4 is past the best (5): progress
    assert verdicts["best"][:1] == [StepVerdict.FAIL] and verdicts["best"][2] == StepVerdict.SUCCESS
    with pytest.raises(ValueError):
        OracleJudge(progress="most")
