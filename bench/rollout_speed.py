"""Rollout speed: 128 expert episodes (16 tasks x 8 rollouts) through the batched runner,
and where the time goes (device, planner, grounder, judge, runner overhead).

Target (issue: agent loop): runner overhead <= 10% of the total. Prints; asserts nothing.
"""
from __future__ import annotations

import time

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import ExpertPlanner
from navrl.worlds.phone.judges import OracleJudge
from navrl.rollout.runner import EpisodeRunner
from navrl.worlds.phone.suites import suite_tasks


def main() -> None:
    tasks16 = suite_tasks("train", 16)
    tasks = [t for t in tasks16 for _ in range(8)]
    groups = [i for i in range(16) for _ in range(8)]
    judge = OracleJudge()
    runner = EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), judge, judge, judge)
    t0 = time.perf_counter()
    trajs = runner.run(tasks, groups=groups)
    wall = time.perf_counter() - t0
    tm = runner.timings
    parts = {k: tm[k] for k in ("device", "planner", "grounder", "judge")}
    overhead = tm["total"] - sum(parts.values())
    steps = sum(t.length for t in trajs)
    print(f"128 expert episodes (16 tasks x 8), {steps} steps in {wall:.2f} s: "
          f"{len(trajs) / wall:.1f} episodes/s, {steps / wall:.0f} steps/s; "
          f"success {sum(t.success for t in trajs)}/{len(trajs)}")
    for k, v in {**parts, "runner overhead": overhead}.items():
        print(f"  {k:16s} {v:7.3f} s  {100 * v / tm['total']:5.1f}%")
    print(f"  runner overhead share: {100 * overhead / tm['total']:.1f}% (target <= 10%)")


if __name__ == "__main__":
    main()
