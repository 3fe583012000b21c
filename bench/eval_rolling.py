"""MiniWoB++ evaluation on a pool of browser pages: batches of one page each (what
``navrl experiment miniwob`` did before 2026-12-07: every batch waits for its longest episode)
against one rolling run over every instance (a freed page takes the next episode, of its own
task first), the same instances, greedy, one planner, in one run (the two orders interleaved
round by round so machine load hits them alike).

Printed per set-up: seconds, episodes/s, environment steps/s, success; then the ratio and how many
instances' outcomes differ (greedy decoding and deterministic pages: none should, except pages
whose reward depends on timing).

    PYTHONPATH=src python bench/eval_rolling.py [--policy docs/results/miniwob/all/bc_rl/policy.pt]
        [--tasks a,b,...] [--instances 50] [--pages 16] [--rounds 1]
"""
from __future__ import annotations

import argparse
import time

TASKS = ["click-test", "click-button", "enter-text", "focus-text-2", "click-checkboxes", "login-user",
         "choose-list", "click-tab-2", "navigate-tree", "search-engine", "email-inbox", "use-autocomplete"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="docs/results/miniwob/all/bc_rl/policy.pt")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--instances", type=int, default=50, help="instances per task")
    ap.add_argument("--pages", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--phone", default="160x210@1")
    a = ap.parse_args()

    from navrl.device.browser import BrowserBackend, chromium_or_none
    if chromium_or_none() is None:
        print("no Chromium here: skipped")
        return 0
    from navrl.agent.policy.base import greedy
    from navrl.device.pool import PoolConfig
    from navrl.device.ray_farm import make_device_factory
    from navrl.eval import evaluate
    from navrl.experiments.pipeline import load_policy
    from navrl.tasks.registry import SuiteOptions, get_suite
    from navrl.worlds.web.judges import web_judges

    suite = get_suite("miniwob")
    names = a.tasks.split(",")
    tasks = [t for n in names for t in suite.tasks(a.instances, 7, SuiteOptions(names=(n,), phone=a.phone))]
    planner = greedy(load_policy(a.policy))
    judges = tuple(web_judges()[:3])
    farm = make_device_factory(None, devices=a.pages, pool=PoolConfig(), backend=BrowserBackend(screenshots="off"))
    runs: dict[str, list] = {"batches of one page each": [], "one rolling run": []}
    outcomes: dict[str, dict] = {}
    try:
        evaluate(planner, "miniwob", tasks=tasks[:a.pages], devices=farm, judges=judges, batch_size=a.pages)  # warm-up
        for _ in range(a.rounds):
            for name, batch in (("batches of one page each", a.pages), ("one rolling run", len(tasks))):
                t0 = time.perf_counter()
                r = evaluate(planner, "miniwob", tasks=tasks, devices=farm, judges=judges, batch_size=batch)
                runs[name].append((time.perf_counter() - t0, sum(t.length for t in r.trajectories), r))
                outcomes[name] = r.successes_by_task()
    finally:
        farm.close()
    secs = {}
    for name, rs in runs.items():
        s = sum(x for x, _, _ in rs) / len(rs)
        steps = sum(n for _, n, _ in rs) / len(rs)
        r = rs[-1][2]
        secs[name] = s
        print(f"{name:26s} {s:7.1f} s  {len(tasks) / s:5.2f} episodes/s  {steps / s:6.1f} steps/s  "
              f"success {100 * r.successes / max(1, r.n):.1f}% ({r.masked} masked)")
    x, y = outcomes["batches of one page each"], outcomes["one rolling run"]
    differ = sum(x.get(k) != y.get(k) for k in set(x) | set(y))
    print(f"rolling / batches: {secs['batches of one page each'] / secs['one rolling run']:.2f}x the episodes/s; "
          f"{differ} of {len(tasks)} instances' outcomes differ ({len(names)} tasks x {a.instances}, {a.pages} pages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
