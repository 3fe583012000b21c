"""Phone-world speed: steps/s without and with screenshots, restore time, memory per
device, and 512 devices each taking one step in one process.

Targets on a 2-core machine (issue: phone world): >= 5,000 steps/s/core without rendering,
>= 150 with PNG screenshots, restore <= 1 ms, 512 devices in <= 4 GiB. For comparison the
transcript's cloud farm needs ~10 s per reset. Issue #27: phone-world creation <= 0.3 ms
(``task.make_device()`` of a new seed: an app's seed data is drawn once per seed, when a world
first reads it) and the oracle judges <= 0.3 ms per step (they read the facts the world ships
in its snapshots).
Prints figures; asserts nothing.
"""
from __future__ import annotations

import gc
import random
import resource
import statistics
import time
import tracemalloc

from navrl.actions import Action
from navrl.worlds.phone.sim import PhoneWorld
from navrl.worlds.phone.suites import suite_tasks


def _pick(world: PhoneWorld, rng: random.Random) -> Action:
    nodes = [n for n in world.observe().nodes if "tap" in n.actions]
    r = rng.random()
    if r < 0.8 and nodes:
        return Action.tap(*rng.choice(nodes).center)
    if r < 0.9:
        return Action.swipe(rng.choice(["up", "down"]))
    return Action.home()


def steps_per_second(render: bool, seconds: float = 3.0) -> tuple[float, float]:
    """(steps per CPU-second of this process = per core, steps per wall-second).

    Per core is measured in process CPU time, so other load on the machine does not
    distort it; the wall figure is what this run saw."""
    rng = random.Random(0)
    w = PhoneWorld(seed=1)
    start = w.snapshot()
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        w.act(_pick(w, rng))
        obs = w.observe()
        if render:
            obs.png
        n += 1
        if n % 40 == 0:
            w.restore(start)
    return n / (time.process_time() - c0), n / (time.perf_counter() - t0)


def restore_ms(n: int = 2000) -> tuple[float, int]:
    w = PhoneWorld(seed=3)
    rng = random.Random(1)
    for _ in range(12):
        w.act(_pick(w, rng))
    snap = w.snapshot()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        w.restore(snap)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, len(snap)


def memory_per_device(n: int = 100) -> float:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    worlds = [t.make_device() for t in suite_tasks("train", n)]
    for w in worlds:
        w.observe()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del worlds
    return used / n


def farm_512() -> tuple[float, float, float]:
    tasks = suite_tasks("train", 512)
    t0 = time.perf_counter()
    worlds = [t.make_device() for t in tasks]
    t_build = time.perf_counter() - t0
    rng = random.Random(2)
    acts = [_pick(w, rng) for w in worlds]
    t0 = time.perf_counter()
    for w, a in zip(worlds, acts):
        w.act(a)
        w.observe()
    t_step = time.perf_counter() - t0
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return t_build, t_step, rss_gib


def creation_ms(n: int = 512) -> tuple[float, float, float, float]:
    """ms of ``task.make_device()``: median and mean over the first world of each seed (draws
    the seed data of the apps its task's setup reads), the median over another world of the
    same seeds (copies it), and the mean of creation plus the first observation for new seeds
    (the home screen reads the App Store's catalog: one more app drawn)."""
    tasks = suite_tasks("train", n, seed=11)
    med, mean = [], 0.0
    for _ in range(2):
        times = []
        for t in tasks:
            t0 = time.perf_counter()
            t.make_device()
            times.append(time.perf_counter() - t0)
        med.append(statistics.median(times) * 1e3)
        mean = mean or statistics.fmean(times) * 1e3
    times = []
    for t in suite_tasks("train", n, seed=12):
        t0 = time.perf_counter()
        t.make_device().observe()
        times.append(time.perf_counter() - t0)
    return med[0], mean, med[1], statistics.fmean(times) * 1e3


class _Straying:
    """The expert, with a seeded random tap instead on ``p`` of the steps (detours)."""

    def __init__(self, p: float):
        from navrl.agent.planner import ExpertPlanner, RandomPlanner
        self.p, self.rng, self.expert, self.rand = p, random.Random(4), ExpertPlanner(), RandomPlanner(5)

    def plan(self, contexts):
        from navrl.worlds.phone.expert import ExpertStuck
        out = []
        for c in contexts:
            try:
                out += self.expert.plan([c]) if self.rng.random() >= self.p else self.rand.plan([c])
            except ExpertStuck:
                out += self.rand.plan([c])
        return out


def oracle_judge_ms(p_stray: float) -> tuple[float, float, int, int]:
    """16 train tasks x 8 rollouts with oracle judges: (judge ms per step, device ms per step
    (act, observe, snapshot with the oracle's facts), steps, scratch worlds the judge built)."""
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.worlds.phone.judges import OracleJudge
    from navrl.rollout.runner import EpisodeRunner
    tasks = [t for t in suite_tasks("train", 16, seed=13) for _ in range(8)]
    j = OracleJudge()
    r = EpisodeRunner(_Straying(p_stray), AccessibilityGrounder(), j, j, j)  # type: ignore[arg-type]
    trajs = r.run(tasks)
    steps = sum(t.length for t in trajs)
    return 1e3 * r.timings["judge"] / steps, 1e3 * r.timings["device"] / steps, steps, j.replays


def main() -> None:
    print("phone world speed (one process = one core)")
    sps, wall = steps_per_second(False)
    print(f"  steps/s/core without rendering : {sps:7.0f}   (target >= 5000; {sps / 5000:.2f}x target; wall {wall:.0f})")
    spr, wall = steps_per_second(True)
    print(f"  steps/s/core with PNG frames   : {spr:7.0f}   (target >= 150; {spr / 150:.2f}x target; wall {wall:.0f})")
    ms, size = restore_ms()
    print(f"  restore(snapshot)         : {ms:9.3f} ms (target <= 1 ms; snapshot {size / 1024:.1f} KiB; "
          f"~{10_000 / ms:,.0f}x faster than a 10 s cloud reset)")
    first, first_mean, again, observed = creation_ms()
    print(f"  phone-world creation      : {first:9.3f} ms (target <= 0.3 ms; {first / 0.3:.2f}x target) for a new "
          f"seed (median; mean {first_mean:.3f} ms: the apps the task's setup reads are drawn then, the others "
          f"when first read); {again:.3f} ms for a seed seen before; new seed created and observed once "
          f"{observed:.3f} ms (mean)")
    for p in (0.0, 0.3):
        jm, dm, steps, replays = oracle_judge_ms(p)
        who = "expert" if p == 0 else f"expert, {p:.0%} random detours"
        print(f"  oracle judges per step    : {jm:9.3f} ms (target <= 0.3 ms; {jm / 0.3:.2f}x target) over {steps} "
              f"steps, 16 tasks x 8 rollouts, {who}; {replays} scratch worlds built; the device step with "
              f"the oracle's facts {dm:.3f} ms")
    mem = memory_per_device()
    print(f"  memory per device         : {mem / 1024:9.1f} KiB")
    tb, ts, rss = farm_512()
    print(f"  512 devices: build {tb:.2f} s, one step each {ts:.2f} s "
          f"({512 / ts:.0f} steps/s), peak RSS {rss:.2f} GiB (target <= 4 GiB)")


if __name__ == "__main__":
    main()
