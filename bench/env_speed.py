"""Phone-world speed: steps/s without and with screenshots, restore time, memory per
device, and 512 devices each taking one step in one process.

Targets on a 2-core machine (issue: phone world): >= 5,000 steps/s/core without rendering,
>= 150 with PNG screenshots, restore <= 1 ms, 512 devices in <= 4 GiB. For comparison the
transcript's cloud farm needs ~10 s per reset. Prints figures; asserts nothing.
"""
from __future__ import annotations

import gc
import random
import resource
import statistics
import time
import tracemalloc

from navrl.actions import Action
from navrl.device.phone import PhoneWorld
from navrl.tasks.suites import suite_tasks


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


def main() -> None:
    print("phone world speed (one process = one core)")
    sps, wall = steps_per_second(False)
    print(f"  steps/s/core without rendering : {sps:7.0f}   (target >= 5000; {sps / 5000:.2f}x target; wall {wall:.0f})")
    spr, wall = steps_per_second(True)
    print(f"  steps/s/core with PNG frames   : {spr:7.0f}   (target >= 150; {spr / 150:.2f}x target; wall {wall:.0f})")
    ms, size = restore_ms()
    print(f"  restore(snapshot)         : {ms:9.3f} ms (target <= 1 ms; snapshot {size / 1024:.1f} KiB; "
          f"~{10_000 / ms:,.0f}x faster than a 10 s cloud reset)")
    mem = memory_per_device()
    print(f"  memory per device         : {mem / 1024:9.1f} KiB")
    tb, ts, rss = farm_512()
    print(f"  512 devices: build {tb:.2f} s, one step each {ts:.2f} s "
          f"({512 / ts:.0f} steps/s), peak RSS {rss:.2f} GiB (target <= 4 GiB)")


if __name__ == "__main__":
    main()
