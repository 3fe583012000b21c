"""Device-farm scaling on this machine: episodes/s of the in-process pool vs Ray device
hosts (1 and 2 hosts), and 512 concurrent phone-world devices spread over 2 hosts.

Workload: the scripted expert with oracle judges on ``train`` tasks (the judges run on
the learner, the devices on the hosts). Ray start-up and host start are reported apart
and not counted in episodes/s. Prints; asserts only that outcomes match the in-process run.

    python bench/farm_scale.py [--episodes 64] [--big 512]
"""
from __future__ import annotations

import argparse
import os
import time

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import ExpertPlanner
from navrl.device.pool import DevicePool, PhoneWorldBackend, PoolConfig
from navrl.judge.oracle import OracleJudge
from navrl.rollout.runner import EpisodeRunner
from navrl.tasks.suites import suite_tasks


def runner() -> EpisodeRunner:
    j = OracleJudge()
    return EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), j, j, j)


def outcome(tr) -> tuple:
    return (tr.valid, tr.success, tr.end, tuple((s.action, s.verdict, s.reward) for s in tr.steps))


def timed(tasks, devices, reps: int = 2) -> tuple[float, list, dict]:
    """Best of ``reps`` runs (the first also warms caches): seconds, trajectories, timings."""
    best, trajs, tm = float("inf"), [], {}
    for _ in range(reps):
        r = runner()
        t0 = time.perf_counter()
        out = r.run(tasks, devices=devices)
        dt = time.perf_counter() - t0
        if dt < best:
            best, trajs, tm = dt, out, dict(r.timings)
    return best, trajs, tm


def line(name: str, dt: float, trajs: list, tm: dict) -> None:
    steps = sum(t.length for t in trajs)
    print(f"{name:28s} {len(trajs) / dt:7.1f} episodes/s  {steps / dt:7.0f} steps/s  "
          f"(wall {dt:5.2f} s; learner: device/wait {tm['device']:5.2f} s, judge {tm['judge']:5.2f} s, "
          f"planner {tm['planner']:4.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--big", type=int, default=512, help="concurrent devices for the scale run (0: skip)")
    args = ap.parse_args()
    import ray

    from navrl.device.ray_farm import FarmConfig, RayFarm

    print(f"machine: {os.cpu_count()} CPUs; workload: expert + oracle judges, {args.episodes} train episodes")
    tasks = suite_tasks("train", args.episodes)

    dt, ref, tm = timed(tasks, None)
    line("fresh devices (no pool)", dt, ref, tm)
    want = [outcome(t) for t in ref]
    pool = DevicePool(PhoneWorldBackend(), PoolConfig(size=len(tasks)))
    dt, got, tm = timed(tasks, pool)
    assert [outcome(t) for t in got] == want
    st = pool.stats()
    line("in-process pool", dt, got, tm)
    print(f"{'':28s} pool: {st['devices']} devices, mean reset {st['mean_reset_ms']:.2f} ms, "
          f"utilisation {100 * st['utilisation']:.0f}%")
    pool.close()

    t0 = time.perf_counter()
    ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False)
    print(f"ray.init: {time.perf_counter() - t0:.1f} s")
    for hosts in (1, 2):
        t0 = time.perf_counter()
        farm = RayFarm(FarmConfig(hosts=hosts, devices_per_host=-(-len(tasks) // hosts), num_cpus_per_host=0.5))
        start = time.perf_counter() - t0
        dt, got, tm = timed(tasks, farm)
        assert [outcome(t) for t in got] == want, "Ray outcomes differ from the in-process run"
        line(f"Ray, {hosts} host{'s' if hosts > 1 else ''}", dt, got, tm)
        fs = farm.stats()
        print(f"{'':28s} hosts started in {start:.1f} s; {fs['devices']} devices, "
              f"mean reset {sum(h['pool']['mean_reset_ms'] for h in fs['per_host']) / hosts:.2f} ms on the hosts")
        farm.close()

    if args.big:
        big = suite_tasks("train", args.big, seed=7)
        farm = RayFarm(FarmConfig(hosts=2, devices_per_host=args.big // 2, num_cpus_per_host=0.5))
        t0 = time.perf_counter()
        devs = farm.lease_batch(big)
        lease = time.perf_counter() - t0
        assert all(hasattr(d, "host") for d in devs), "some leases failed"
        r = runner()
        t0 = time.perf_counter()
        trajs = r.run(big, devices=devs)
        dt = time.perf_counter() - t0
        farm.release_batch(devs)
        fs = farm.stats()
        per = [(h["host"], h["pool"]["devices"], h["pool"]["episodes"]) for h in fs["per_host"]]
        print(f"{args.big} concurrent devices over 2 hosts: leased (restore + probe + first observation) in "
              f"{lease:.2f} s; {per}")
        line(f"Ray, 2 hosts, {args.big} devices", dt, trajs, r.timings)
        print(f"{'':28s} valid {sum(t.valid for t in trajs)}/{len(trajs)}, "
              f"success {sum(t.success for t in trajs)}/{len(trajs)}")
        farm.close()
    ray.shutdown()


if __name__ == "__main__":
    main()
