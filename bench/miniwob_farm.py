"""MiniWoB++ rollouts on a pool of browser pages: what each page-reuse rule buys, in one run.

One RL-shaped batch: ``--groups`` tasks drawn at random from ``--tasks`` (fresh instance seeds),
``--rollouts`` episodes of each (a GiGPO group), run on ``--pages`` browser pages by the
scripted solutions (no model: the figures are the device side). The batch is larger than
the pool, so the runner keeps the pages busy as a rolling queue. Three set-ups, the same
batches, interleaved round by round so machine load hits them alike:

- **fresh**: first-come order, and a page that switches task opens a new browser context
  (and renderer) — what the pool did before these rules;
- **affinity**: a freed page takes a waiting episode of the task it shows (its reset then
  runs in place), still a new context on a switch;
- **navrl**: affinity, and a switch to another MiniWoB page navigates in the same context.

Printed per set-up: episodes/s, environment steps/s, new contexts, in-context switches,
in-place resets, the browser's CPU seconds, and the ratios to **fresh**.

    python bench/miniwob_farm.py [--pages 16] [--groups 16] [--rollouts 4] [--rounds 2]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from contextlib import contextmanager

TASKS = ["click-test", "click-button", "click-link", "enter-text", "focus-text", "click-dialog", "click-checkboxes",
         "login-user", "click-option", "enter-password"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=16)
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--rollouts", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2, help="batches per set-up (after one warm-up batch)")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--phone", default="160x210@1")
    args = ap.parse_args()

    from navrl.device.browser import chromium_or_none
    if chromium_or_none() is None:
        print("no Chromium here: skipped")
        return 0
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.device.browser import BrowserBackend
    from navrl.device.browser.device import BrowserDevice
    from navrl.device.base import DeviceError
    from navrl.device.pool import DevicePool, PoolConfig
    from navrl.experiments.common import child_cpu_seconds
    from navrl.worlds.web.judges import web_judges
    from navrl.rollout.runner import EpisodeRunner
    from navrl.worlds.web.tasks import miniwob_task
    from navrl.agent.planner import ExpertPlanner

    names = args.tasks.split(",")

    def batch(seed: int) -> list:
        rng = random.Random(seed)
        out = []
        for _ in range(args.groups):
            name = rng.choice(names)
            out += [miniwob_task(name, rng.randrange(2**31), phone=args.phone) for _ in range(args.rollouts)]
        return out

    @contextmanager
    def rules(setup: str, pool: DevicePool):
        """Switch the page-reuse rules off for the older set-ups (restored afterwards)."""
        orig_pick, orig_switch = DevicePool.pick_next, BrowserDevice._a_switch_app

        async def new_context(self, snap, app):  # noqa: ANN001 - same signature as the method it replaces
            raise DeviceError("browser_error", "bench: switching in place is off")
        if setup == "fresh":
            pool.pick_next = lambda used, waiting: 0  # type: ignore[method-assign]
        if setup in ("fresh", "affinity"):
            BrowserDevice._a_switch_app = new_context  # type: ignore[method-assign]
        try:
            yield
        finally:
            pool.__dict__.pop("pick_next", None)
            DevicePool.pick_next, BrowserDevice._a_switch_app = orig_pick, orig_switch

    setups = ("fresh", "affinity", "navrl")
    pools = {s: DevicePool(BrowserBackend(screenshots="off"), PoolConfig(size=args.pages)) for s in setups}
    sj, aj, tj = web_judges()
    runner = EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), sj, aj, tj)
    tot = {s: {"s": 0.0, "eps": 0, "steps": 0, "cpu": 0.0, "ok": 0} for s in setups}

    def devices(pool: DevicePool) -> list:
        return [sl.device for sl in pool.book.slots.values()]

    try:
        for r in range(args.rounds + 1):
            tasks = batch(1000 + r)
            for s in setups:
                pool = pools[s]
                before = [(d.contexts_created, d.app_switches, d.episodes) for d in devices(pool)]
                with rules(s, pool):
                    c0, t0 = child_cpu_seconds(), time.perf_counter()
                    trajs = runner.run(tasks, devices=pool)
                    dt, c1 = time.perf_counter() - t0, child_cpu_seconds()
                if r == 0:
                    continue                          # warm-up: every page opens its first context
                after = [(d.contexts_created, d.app_switches, d.episodes) for d in devices(pool)]
                new = [tuple(a - b for a, b in zip(x, y)) for x, y in zip(after, before + [(0, 0, 0)] * len(after))]
                t = tot[s]
                t["s"] += dt
                t["eps"] += len(trajs)
                t["steps"] += sum(1 for tr in trajs for st in tr.steps if st.kind == "device")
                t["ok"] += sum(tr.success for tr in trajs)
                t["cpu"] += (c1 - c0) if c0 is not None and c1 is not None else 0.0
                t["ctx"] = t.get("ctx", 0) + sum(n[0] for n in new)
                t["sw"] = t.get("sw", 0) + sum(n[1] for n in new)
                t["inplace"] = t.get("inplace", 0) + sum(n[2] - n[0] - n[1] for n in new)
                print(f"round {r} {s:9s} {len(trajs)} episodes in {dt:5.1f} s", flush=True)
    finally:
        for p in pools.values():
            p.close()

    n = args.groups * args.rollouts
    print(f"\n{args.rounds} batches of {args.groups} tasks x {args.rollouts} rollouts = {n} episodes on "
          f"{args.pages} pages ({len(names)} task pages, screen {args.phone}, scripted solutions)\n")
    print(f"{'set-up':10s} {'episodes/s':>10s} {'steps/s':>8s} {'success':>8s} {'contexts':>9s} {'switches':>9s} "
          f"{'in place':>9s} {'browser CPU s':>14s}")
    base = tot["fresh"]
    for s in setups:
        t = tot[s]
        print(f"{s:10s} {t['eps'] / t['s']:10.2f} {t['steps'] / t['s']:8.2f} {t['ok'] / t['eps']:8.0%} "
              f"{t.get('ctx', 0):9d} {t.get('sw', 0):9d} {t.get('inplace', 0):9d} {t['cpu']:14.1f}")
    for s in setups[1:]:
        t = tot[s]
        print(f"{s} vs fresh: {base['s'] / t['s']:.2f}x episodes/s, browser CPU {t['cpu'] / max(1e-9, base['cpu']):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
