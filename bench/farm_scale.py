"""Device-farm scaling on this machine.

Default: episodes/s of the in-process pool vs Ray device hosts (1 and 2 hosts), and 512
concurrent phone-world devices spread over 2 hosts, all at CPU speed.

``--latency``: the farm at real-device latency. Every phone world is wrapped in the latency
model (``LatencyBackend``: each action takes ``--act-s`` on one learner, ``--ray-act-s`` on
Ray hosts), so the devices are I/O-bound like emulators and phones. For each run: wall time
(leases included), the latency bound (the longest episode's actions × the action latency:
what a farm that overlaps every wait and costs nothing else would take), their ratio,
episodes/s and the learner's CPU (process CPU / wall: near 1 core it is CPU-bound). Then the
learner's CPU per step (planner, grounder, judges, the simulated devices) and the devices
per learner core at which a run turns CPU-bound, and episodes/s from 1 to 8 hosts with a
fixed number of devices per host. "devices" rows measure the farm alone: every device takes
``--farm-steps`` synchronous steps with no learner work in between.

Workload: the scripted expert with oracle judges on ``train`` tasks (the judges run on the
learner, the devices on the hosts). Ray start-up and host start are reported apart and not
counted. Prints; asserts only that outcomes match the in-process run.

    python bench/farm_scale.py [--episodes 64] [--big 512]
    python bench/farm_scale.py --latency [--devices 64,512,4096] [--hosts 1,2,4,8] [--per-host 64]
                               [--ray-devices 64,512,4096@8] [--farm-steps 5]
"""
from __future__ import annotations

import argparse
import math
import os
import time

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import ExpertPlanner
from navrl.device.pool import DevicePool, PhoneWorldBackend, PoolConfig
from navrl.worlds.phone.judges import OracleJudge
from navrl.rollout.runner import EpisodeRunner
from navrl.worlds.phone.suites import suite_tasks


def runner(batch: int = 0) -> EpisodeRunner:
    j = OracleJudge()
    j.worlds.cache.size = max(j.worlds.cache.size, batch)    # one scratch world per task of the batch
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
    ap.add_argument("--latency", action="store_true", help="the farm at real-device latency (see above)")
    ap.add_argument("--devices", default="64,512,4096", help="--latency: devices per run")
    ap.add_argument("--hosts", default="1,2,4,8", help="--latency: Ray host counts (0 in the list: skip Ray)")
    ap.add_argument("--ray-devices", default="", help="--latency: devices of the Ray runs (default --devices); "
                    "N@H runs N devices on H hosts only, e.g. 64,512,4096@8")
    ap.add_argument("--per-host", type=int, default=64, help="--latency: devices per host of the scaling series")
    ap.add_argument("--act-s", type=float, default=0.5, help="--latency: seconds per action on one learner "
                    "(0: no in-process runs)")
    ap.add_argument("--ray-act-s", type=float, default=2.0, help="--latency: seconds per action on Ray hosts")
    ap.add_argument("--farm-steps", type=int, default=5, help="--latency: synchronous steps of the devices-only "
                    "runs (every --devices x --hosts; 0: skip)")
    args = ap.parse_args()
    if args.latency:
        return at_latency(args)
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


# ---------------------------------------------------------------------------------- --latency
def device_steps(tr) -> int:
    return sum(1 for s in tr.steps if s.kind == "device")


class Row:
    """One run at latency: what it took against what the devices alone would take."""

    def __init__(self, kind: str, n: int, hosts: int, act_s: float, wall: float, bound: float, cpu: float,
                 steps: int):
        self.kind, self.n, self.hosts, self.act_s, self.wall, self.bound = kind, n, hosts, act_s, wall, bound
        self.cpu, self.steps = cpu, steps

    @property
    def ratio(self) -> float:
        return self.wall / self.bound

    @property
    def eps(self) -> float:
        return self.n / self.wall

    def where(self) -> str:
        return f"{self.hosts} Ray host{'s' if self.hosts > 1 else ''}" if self.hosts else "1 learner"

    def line(self) -> str:
        rate = f"{self.eps:6.1f} ep/s" if self.kind != "devices" else f"{self.n * self.steps / self.wall:6.0f} act/s"
        return (f"{self.kind:8s} {self.where():13s} {self.n:5d} dev  {self.act_s:4.1f} s/act  wall {self.wall:6.1f} s  "
                f"bound {self.bound:5.1f} s  ratio {self.ratio:5.2f}  {rate}  learner CPU {self.cpu / self.wall:4.2f} "
                f"cores")


def learner_run(tasks: list, farm, hosts: int, act_s: float, want: list, kind: str = "learner") -> Row:
    """Warm the farm (worlds built, snapshots cached), then one timed batch, leases included;
    the bound: the longest episode's actions x the action latency."""
    farm.release_batch(farm.lease_batch(tasks))
    r = runner(len(tasks))
    c0, t0 = time.process_time(), time.perf_counter()
    trajs = r.run(tasks, devices=farm)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert [outcome(t) for t in trajs] == want, "outcomes differ from the in-process run"
    row = Row(kind, len(tasks), hosts, act_s, wall, max(device_steps(t) for t in trajs) * act_s, cpu,
              sum(t.length for t in trajs))
    print(row.line(), f"({1000 * cpu / row.steps:.1f} ms CPU/step; judges {1000 * r.timings['judge'] / row.steps:.2f} "
          f"ms/step, {r.step_judge.replays} scratch worlds built; load average {os.getloadavg()[0]:.1f})",
          flush=True)
    return row


def devices_run(tasks: list, farm, hosts: int, act_s: float, steps: int) -> Row:
    """The farm alone: every device takes ``steps`` synchronous steps (act, observe), no
    planner or judge in between; the bound is ``steps`` x the action latency."""
    from navrl.actions import Action
    from navrl.device.pool import step_devices
    devs = farm.lease_batch(tasks)
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        res = step_devices(devs, [Action.home()] * len(devs), False)
        assert all(isinstance(x, tuple) for x in res), [x for x in res if not isinstance(x, tuple)][:3]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    farm.release_batch(devs)
    row = Row("devices", len(tasks), hosts, act_s, wall, steps * act_s, cpu, steps)
    print(row.line(), flush=True)
    return row


def at_latency(args) -> None:
    from navrl.device.latency import LatencyBackend, LatencyConfig

    sizes = [int(x) for x in args.devices.split(",") if x]     # empty: no in-process runs
    hosts = [int(x) for x in args.hosts.split(",") if x and int(x) > 0]
    ray_runs = []     # (devices, hosts) with the learner's workload
    for spec in filter(None, (args.ray_devices or args.devices).split(",")):
        n, _, h = spec.partition("@")
        ray_runs += [(int(n), int(h))] if h else [(int(n), k) for k in hosts]
    scaling = [(args.per_host * h, h) for h in hosts] if args.per_host else []
    farm_only = [(n, h) for n in sizes for h in hosts] if args.farm_steps else []
    biggest = max(sizes + [n for n, _ in ray_runs + scaling])
    print(f"machine: {os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f}); workload: expert + oracle "
          f"judges on up to {biggest} train tasks")
    tasks = suite_tasks("train", biggest, seed=7)

    # the in-process reference (no latency) of the tasks the learner runs use: outcomes, and
    # the learner's CPU per step
    n_ref = max((sizes if args.act_s > 0 else []) + [n for n, _ in ray_runs + scaling], default=1)
    pool = DevicePool(PhoneWorldBackend(), PoolConfig(size=n_ref))
    pool.release_batch(pool.lease_batch(tasks[:n_ref]))
    r = runner(n_ref)
    t0 = time.perf_counter()
    ref = r.run(tasks[:n_ref], devices=pool)
    dt = time.perf_counter() - t0
    pool.close()
    want = [outcome(t) for t in ref]
    steps = sum(t.length for t in ref)
    per = {k: 1000 * v / steps for k, v in r.timings.items()}
    learner_ms = per["planner"] + per["grounder"] + per["judge"]
    lens = [device_steps(t) for t in ref]
    mean_len = sum(lens) / len(lens)
    print(f"in-process reference: {len(ref)} episodes, {steps} steps in {dt:.1f} s; actions per episode "
          f"mean {mean_len:.1f}, max {max(lens)}")
    print(f"learner CPU per step: planner {per['planner']:.2f} ms, grounder {per['grounder']:.2f} ms, judges "
          f"{per['judge']:.2f} ms (= {learner_ms:.2f} ms); the simulated device (act, observe, snapshot) "
          f"{per['device']:.2f} ms more where the devices run in the learner")

    rows: list[Row] = []
    backend = LatencyBackend(PhoneWorldBackend(), LatencyConfig(act_s=args.act_s))
    if args.act_s > 0:
        print(f"\n-- one learner, in-process latency pool, {args.act_s:g} s per action")
    for n in sizes if args.act_s > 0 else []:
        pool = DevicePool(backend, PoolConfig(size=n))
        if args.farm_steps:
            rows.append(devices_run(tasks[:n], pool, 0, args.act_s, args.farm_steps))
        rows.append(learner_run(tasks[:n], pool, 0, args.act_s, want[:n]))
        pool.close()

    if ray_runs or scaling or farm_only:
        import ray

        from navrl.device.ray_farm import FarmConfig, RayFarm
        t0 = time.perf_counter()
        ray.init(num_cpus=max(8, os.cpu_count() or 2), include_dashboard=False, log_to_driver=False,
                 _node_ip_address="127.0.0.1")
        print(f"\nray.init: {time.perf_counter() - t0:.1f} s")
        backend = LatencyBackend(PhoneWorldBackend(), LatencyConfig(act_s=args.ray_act_s))
        for h in sorted({h for _, h in ray_runs + scaling + farm_only}):
            runs = sorted({n for n, k in ray_runs + scaling + farm_only if k == h})
            t0 = time.perf_counter()
            farm = RayFarm(FarmConfig(hosts=h, devices_per_host=math.ceil(max(runs) / h), backend=backend,
                                      num_cpus_per_host=0.5))
            print(f"-- {h} Ray host{'s' if h > 1 else ''} ({time.perf_counter() - t0:.1f} s to start), "
                  f"{args.ray_act_s:g} s per action")
            for n in runs:
                if (n, h) in farm_only:
                    rows.append(devices_run(tasks[:n], farm, h, args.ray_act_s, args.farm_steps))
                if (n, h) in ray_runs:
                    rows.append(learner_run(tasks[:n], farm, h, args.ray_act_s, want[:n]))
                if (n, h) in scaling:   # every host the same work: the first per-host tasks, h rollouts each
                    k = args.per_host
                    rows.append(learner_run(tasks[:k] * h, farm, h, args.ray_act_s, want[:k] * h, "scaling"))
            farm.close()
        ray.shutdown()

    print("\n| run | devices | where | s/action | wall s | bound s | ratio | episodes/s | learner CPU (cores) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for w in rows:
        eps = f"{w.eps:.1f}" if w.kind != "devices" else "-"
        print(f"| {w.kind} | {w.n} | {w.where()} | {w.act_s:g} | {w.wall:.1f} | {w.bound:.1f} | {w.ratio:.2f} | "
              f"{eps} | {w.cpu / w.wall:.2f} |")
    big_ray = max((w for w in rows if w.kind == "learner" and w.hosts), key=lambda w: w.steps, default=None)
    ray_ms = 1000 * big_ray.cpu / big_ray.steps if big_ray is not None else learner_ms
    for act_s, label, ms in ((args.act_s, "devices in the learner", learner_ms + per["device"]),
                             (args.ray_act_s, f"devices on Ray hosts, measured with {big_ray.n if big_ray else 0}",
                              ray_ms)):
        if act_s <= 0:
            continue
        at_once = act_s / (ms / 1000)
        print(f"devices per learner core at {act_s:g} s/action ({label}: {ms:.2f} ms of learner CPU per step): "
              f"{at_once:.0f} devices stepping at once, i.e. a batch of {at_once * max(lens) / mean_len:.0f} "
              f"episodes of this mix ({mean_len:.1f} of at most {max(lens)} actions each); beyond, CPU-bound")
    series = [next((w for w in rows if w.kind == "scaling" and w.hosts == h), None) for _, h in scaling]
    if series and series[0] is not None:
        base = series[0].eps
        print(f"scaling at {args.ray_act_s:g} s/action, {args.per_host} devices per host (the first "
              f"{args.per_host} tasks, one rollout per host):")
        for w in series:
            if w is not None:
                print(f"  {w.hosts} hosts: {w.eps:6.1f} episodes/s = {w.eps / (base * w.hosts):.2f} x linear")


if __name__ == "__main__":
    main()
