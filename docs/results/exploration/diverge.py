"""From the start: where does the planner first leave the expert's path? The planner plays
multi-app tasks greedily from the beginning; at every state of its own path the expert is asked
what it would do there, and the first step where the two differ is reported per template.

    PYTHONPATH=src python docs/results/exploration/diverge.py CKPT [--suite train] [--n 48] [--show 1] [--json out.json]

The expert's step at a state is what the world's scripted expert does from that state (it
reads the device), so "first wrong step" i means the planner's first i steps were the
expert's own. (Steps are compared by their ``Step:`` line.)
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import ExpertPlanner, Planner
from navrl.agent.policy.base import greedy
from navrl.judge.sets import make_judges
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.tasks.registry import get_suite

sys.path.insert(0, str(Path(__file__).parent))
from handover import multi_app_tasks  # noqa: E402


def _step(text: str) -> str:
    return next((ln for ln in text.splitlines() if ln.startswith("Step:")), text.strip())


class _Compare(Planner):
    """Plans with ``learner``; records (learner's step, expert's step) at every state."""

    name = "compare"

    def __init__(self, learner: Planner):
        self.learner, self.expert = learner, ExpertPlanner()
        self.log: dict = defaultdict(list)

    def plan(self, contexts):
        mine, theirs = self.learner.plan(contexts), self.expert.plan(contexts)
        for c, a, b in zip(contexts, mine, theirs):
            self.log[(c.task.id, id(c.device))].append((_step(a.text), _step(b.text)))
        return mine


def first_divergence(policy, tasks: list) -> tuple[dict, list]:
    """Task id -> (index of the first step that is not the expert's or None, learner's, expert's step)."""
    p = _Compare(greedy(policy))
    sj, aj, tj = make_judges(get_suite("train").default_judge("phone"))[:3]
    trajs = EpisodeRunner(p, AccessibilityGrounder(), sj, aj, tj, config=RunnerConfig()).run(tasks)
    out = {}
    for (tid, _), steps in p.log.items():
        out[tid] = next(((i, a, b) for i, (a, b) in enumerate(steps) if a != b), (None, "", ""))
    return out, trajs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ckpt")
    ap.add_argument("--suite", default="train")
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--show", type=int, default=1, help="examples printed per template")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    from navrl.experiments.pipeline import load_policy
    tasks = multi_app_tasks(a.suite, a.n)
    div, trajs = first_divergence(load_policy(a.ckpt), tasks)
    per: dict = defaultdict(list)
    shown: dict = defaultdict(int)
    for tid, (i, mine, theirs) in div.items():
        tmpl = tid.split(":")[1]
        per[tmpl].append(i)
        if i is not None and shown[tmpl] < a.show:
            shown[tmpl] += 1
            print(f"{tid} step {i}: planner {mine!r}, expert {theirs!r}")
    for tmpl, v in sorted(per.items()):
        print(f"{tmpl:24s} first step off the expert's path: {sorted(v, key=lambda x: (x is None, x or 0))}")
    print(f"success from the start: {sum(bool(t.success) for t in trajs if t.valid)}/{len(trajs)}")
    if a.json:
        Path(a.json).write_text(json.dumps({tid: list(v) for tid, v in div.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
