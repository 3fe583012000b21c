"""The reduction of issue 26: play multi-app train tasks with the expert handing over k steps
before the end, greedy, clean (no perturbation), and count successes.

    PYTHONPATH=src python docs/results/exploration/handover.py CKPT [CKPT ...] [--n 48] [--ks 1,2,3,0]
        [--suite train] [--seed 0] [--json out.json] [--per-template]

CKPT: ``sft.pt`` or a trainer run dir / checkpoint (anything ``navrl.experiments.pipeline.load_policy``
reads). k = 0 means "from the start" (no guide). k counts the expert's own steps: the expert's
episode of n steps (its last one is Complete / Complete: answer) is played by the expert for its
first n - k steps, by the planner from there (``navrl.agent.guided.GuidedPlanner``).

Tasks: the first ``--n`` instances, round-robin over the suite's templates that use more than
one app (the templates the trainer's guided starts apply to), seed block ``--seed``, clean.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.guided import GuidedPlanner
from navrl.agent.planner import ExpertPlanner
from navrl.agent.policy.base import greedy
from navrl.eval.intervals import wilson_interval
from navrl.judge.sets import make_judges
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.tasks.registry import get_suite


def multi_app_tasks(suite: str = "train", n: int = 48, seed: int = 0, clean: bool = True) -> list:
    """The first ``n`` multi-app instances of ``suite`` (round-robin over its multi-app templates)."""
    from navrl.worlds.phone.sim import PerturbConfig
    from navrl.worlds.phone.suites import SUITES, suite_templates
    from navrl.worlds.phone.task import make_task
    d = SUITES[suite]
    ts = [t for t in suite_templates(suite) if len(t.apps) > 1]
    base = d.seed_base + seed * 100_000
    return [make_task(ts[i % len(ts)].name, base + i, suite=suite, skin=d.skin, layout=d.layout,
                      perturb=PerturbConfig.off() if clean else None) for i in range(n)]


def play(policy, tasks: list, k: int, max_steps: int | None = None) -> list:
    """Trajectories of ``tasks``: the expert plays all but the last ``k`` of its steps (k 0: none)."""
    planner = GuidedPlanner(greedy(policy), ExpertPlanner())
    planner.reset({t.id: max(0, t.expert_length() - k) for t in tasks} if k > 0 else {})
    step_j, ask_j, term_j = make_judges(get_suite("train").default_judge("phone"))[:3]
    runner = EpisodeRunner(planner, AccessibilityGrounder(), step_j, ask_j, term_j,
                           config=RunnerConfig(max_steps=max_steps))
    return runner.run(tasks)


def fmt(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} ({100 * k / n:.0f}%, {100 * lo:.0f}-{100 * hi:.0f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ckpts", nargs="+")
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--ks", default="1,2,3,0", help="hand-over points, steps before the end (0: from the start)")
    ap.add_argument("--suite", default="train")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-template", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from navrl.experiments.pipeline import load_policy
    tasks = multi_app_tasks(a.suite, a.n, a.seed)
    ks = [int(x) for x in a.ks.split(",")]
    out: dict = {}
    for ck in a.ckpts:
        pol = load_policy(ck)
        out[ck] = {}
        for k in ks:
            trajs = play(pol, tasks, k)
            ok = {t.task["id"]: bool(t.success) for t in trajs if t.valid}
            per = defaultdict(lambda: [0, 0])
            for t in trajs:
                if t.valid:
                    per[t.task["template"]][0] += bool(t.success)
                    per[t.task["template"]][1] += 1
            out[ck][k] = {"success": ok, "per_template": {tp: v for tp, v in sorted(per.items())}}
            s = sum(ok.values())
            label = "from the start" if k == 0 else f"last {k}"
            print(f"{ck}  {label:>14s}: {fmt(s, len(ok))}", flush=True)
            if a.per_template:
                for tp, (kk, nn) in sorted(per.items()):
                    print(f"      {tp:24s} {kk}/{nn}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
