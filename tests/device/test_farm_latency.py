"""The farm at device latency: the latency model, every wait of a connected pool overlapped
(no thread cap, no thread per wait), outcomes identical to the in-process run, and the
rollout deadline that masks stragglers as ``timeout``."""
from __future__ import annotations

import pickle
import random
import statistics
import threading
import time

import pytest

from navrl.actions import Action
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import ExpertPlanner
from navrl.device.base import ActResult, Device, Health
from navrl.device.latency import AsyncLatencyDevice, LatencyBackend, LatencyConfig, LatencyDevice
from navrl.device.pool import DeviceBackend, DevicePool, PhoneWorldBackend, PoolConfig, step_devices
from navrl.worlds.phone.judges import OracleJudge
from navrl.observation import Observation, UINode
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.worlds.phone.suites import suite_tasks


def outcome(tr) -> tuple:
    return (tr.valid, tr.invalid_reason, tr.end, tr.success, tr.terminal_verdict, round(tr.terminal_reward, 6),
            tuple((s.output, s.action, s.verdict, round(s.reward, 6), s.screen_hash) for s in tr.steps))


def runner(**cfg) -> EpisodeRunner:
    j = OracleJudge()
    return EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), j, j, j, config=RunnerConfig(**cfg))


TASKS = suite_tasks("train", 12, seed=5)


@pytest.fixture(scope="module")
def in_process():
    return [outcome(t) for t in runner().run(TASKS)]


class Counter(Device):
    """A cheap in-process device: the screen is the number of actions so far."""

    platform = "fake"

    def __init__(self) -> None:
        self.n = 0

    def observe(self) -> Observation:
        return Observation((UINode("n", "button", f"s{self.n}", (0, 0, 10, 10)),), None, (100, 100), "fake")

    def act(self, action: Action) -> ActResult:
        self.n += 1
        return ActResult(True)

    def snapshot(self) -> object:
        return self.n

    def restore(self, snapshot: object) -> None:
        self.n = int(snapshot)   # type: ignore[call-overload]

    def health(self) -> Health:
        return Health(True)


class CounterBackend(DeviceBackend):
    name = "counter"
    in_process = True

    def create(self, slot: int) -> Device:
        return Counter()

    def task_snapshot(self, task) -> object:
        return 0


# ------------------------------------------------------------------ the latency model
def test_draws_follow_the_configured_distribution_and_repeat_with_the_seed():
    rng = random.Random(1)
    for dist in ("fixed", "uniform", "exponential", "lognormal"):
        cfg = LatencyConfig(act_s=0.5, dist=dist, spread=0.5).validate()
        xs = [cfg.draw("act", rng) for _ in range(20_000)]
        assert statistics.fmean(xs) == pytest.approx(0.5, rel=0.03), dist
        assert (statistics.pstdev(xs) == 0) == (dist == "fixed")
    tail = LatencyConfig(act_s=0.05, tail_p=0.05, tail_s=1.0)
    xs = [tail.draw("act", rng) for _ in range(20_000)]
    assert sum(x == 1.0 for x in xs) / len(xs) == pytest.approx(0.05, abs=0.006)
    assert set(xs) == {0.05, 1.0}
    assert tail.draw("snapshot", rng) == 0.0 and tail.draw("health", rng) == 0.0   # no mean, no tail
    a, b = (LatencyDevice(Counter(), LatencyConfig(dist="exponential", tail_p=0.1, seed=3), slot=7) for _ in "ab")
    assert [a._delay("act") for _ in range(50)] == [b._delay("act") for _ in range(50)]
    c = LatencyDevice(Counter(), LatencyConfig(dist="exponential", seed=3), slot=8)
    assert [a._delay("act") for _ in range(5)] != [c._delay("act") for _ in range(5)]
    for bad in (dict(dist="pareto"), dict(act_s=-1), dict(tail_p=1.5), dict(tail_calls=("tap",)),
                dict(dist="uniform", spread=2.0)):
        with pytest.raises(ValueError):
            LatencyConfig(**bad).validate()


def test_latency_backend_wraps_any_backend_and_pickles():
    be = LatencyBackend(PhoneWorldBackend(), act_s=0.01, reset_s=0.02, seed=4)
    again = pickle.loads(pickle.dumps(be))
    assert again.cfg == be.cfg and again.name == "phone+latency" and not again.in_process
    dev = again.create(3)
    assert isinstance(dev, AsyncLatencyDevice) and hasattr(dev, "aact")
    task = TASKS[0]
    dev.restore(again.task_snapshot(task))
    t0 = time.monotonic()
    dev.act(Action.home())
    assert time.monotonic() - t0 >= 0.01
    assert dev.observe().nodes == task.make_device().observe().nodes     # what the inner device shows
    assert dev.state.fg is None                                          # privileged reads reach the world
    blocking = LatencyBackend(CounterBackend(), act_s=0.0)
    blocking.inner.in_process = False
    assert type(blocking.create(0)) is LatencyDevice                     # no async methods over blocking devices


# ------------------------------------------------------------------ overlap
def test_every_leased_device_waits_at_once_without_a_thread_each():
    n, act_s = 300, 0.3
    be = LatencyBackend(CounterBackend(), act_s=act_s, reset_s=act_s)
    threads0 = threading.active_count()
    with DevicePool(be, PoolConfig(size=n, call_timeout_s=5.0)) as pool:
        devs = pool.lease_batch(["t"] * n)
        threads = threading.active_count() - threads0
        lease_peak = pool.stats()["calls_in_flight_peak"]
        t0 = time.monotonic()
        res = step_devices(devs, [Action.home()] * n, want_snapshot=True)
        step_s = time.monotonic() - t0
        pool.release_batch(devs)
        st = pool.stats()
    assert [r[1] for r in res] == [1] * n and all(r[0].nodes[0].label == "s1" for r in res)
    # every reset, then every action, was in flight at the same time (a pool that ran them
    # 64 at a time would peak at 64); the wall clock only rules out one after another (90 s)
    assert lease_peak == n and st["calls_in_flight_peak"] == n
    assert step_s < n * act_s / 10
    assert st["devices"] == n and st["leased"] == 0
    assert threads <= 8          # the pool's loop (and a few creation workers), not a thread per device


def test_in_process_devices_still_step_inline_in_order():
    pool = DevicePool(CounterBackend(), PoolConfig(size=4))
    devs = pool.lease_batch(["t"] * 4)
    assert all(d.step_batcher is None for d in devs)
    main = threading.get_ident()
    seen: list[int] = []
    for d in devs:
        d._slot.device.act = lambda a, d=d: seen.append((d.slot, threading.get_ident())) or ActResult(True)
    step_devices(devs, [Action.home()] * 4, want_snapshot=False)
    pool.close()
    assert seen == [(i, main) for i in range(4)]
    assert pool.stats()["calls_in_flight_peak"] == 0


# ------------------------------------------------------------------ outcomes
@pytest.mark.parametrize("pipeline", [True, False])
def test_latency_wrapped_pool_gives_the_in_process_outcomes(in_process, pipeline):
    lat = LatencyConfig(act_s=0.02, observe_s=0.005, reset_s=0.03, dist="lognormal", spread=0.8, seed=2)
    with DevicePool(LatencyBackend(PhoneWorldBackend(), lat), PoolConfig(size=len(TASKS))) as pool:
        got = runner(pipeline=pipeline).run(TASKS, devices=pool)
        again = runner(pipeline=pipeline).run(TASKS, devices=pool)    # rolled-back devices
        st = pool.stats()
    assert [outcome(t) for t in got] == in_process and [outcome(t) for t in again] == in_process
    assert sum(t.success for t in got) >= 10
    assert st["calls_in_flight_peak"] == len(TASKS) and st["failures"] == 0


def test_pipelined_runner_lets_a_slow_call_delay_only_its_own_episode():
    """Device i answers its (i+1)-th action after 0.5 s, every other call after 0.02 s.
    Lockstep waits 0.5 s in four different rounds; the pipelined runner overlaps them."""
    tasks = [TASKS[i] for i in (2, 3, 5, 8)]    # they act from their first step on

    spans: dict[bool, list[tuple[float, float]]] = {True: [], False: []}

    class OneSlowCall(AsyncLatencyDevice):
        acts = 0

        def _delay(self, call):
            if call != "act":
                return 0.0
            self.acts += 1
            if self.acts != self.slot + 1:
                return 0.02
            t = time.monotonic()
            spans[pipeline].append((t, t + 0.5))    # when the slow call waits
            return 0.5

    class Backend(LatencyBackend):
        def create(self, slot):
            return OneSlowCall(self.inner.create(slot), self.cfg, slot)

    times, got = {}, {}
    for pipeline in (True, False):
        with DevicePool(Backend(PhoneWorldBackend()), PoolConfig(size=4)) as pool:
            devs = pool.lease_batch(tasks)
            assert [d.slot for d in devs] == [0, 1, 2, 3]
            t0 = time.monotonic()
            trajs = runner(pipeline=pipeline).run(tasks, devices=devs)
            times[pipeline] = time.monotonic() - t0
            pool.release_batch(devs)
        got[pipeline] = [outcome(t) for t in trajs]
    steps = [sum(1 for s in t.steps if s.kind == "device") for t in trajs]
    assert min(steps) >= 4 and all(t.steps[i].kind == "device" for t in trajs for i in range(4))
    assert got[True] == got[False]
    assert times[False] > 4 * 0.5                # four rounds waited for a slow device
    for pipeline, overlap in ((True, True), (False, False)):
        starts, ends = zip(*sorted(spans[pipeline]))
        assert len(starts) == 4
        # pipelined: the four slow calls waited together; lockstep: one after another
        assert (max(starts) < min(ends)) is overlap
        assert all(b >= a for a, b in zip(ends[:-1], starts[1:])) is not overlap


# ------------------------------------------------------------------ more episodes than devices
@pytest.mark.parametrize("pipeline", [True, False])
def test_a_batch_larger_than_the_pool_rolls_over_its_devices(in_process, pipeline):
    """12 episodes on 4 connected devices: at most 4 leased at once, each finished episode
    hands its device on, and every outcome is the in-process one."""
    lat = LatencyConfig(act_s=0.01, observe_s=0.002, reset_s=0.01, seed=4)
    with DevicePool(LatencyBackend(PhoneWorldBackend(), lat), PoolConfig(size=4)) as pool:
        trajs = runner(pipeline=pipeline).run(TASKS, devices=pool)
        st = pool.stats()
    assert [outcome(t) for t in trajs] == in_process
    assert st["devices"] <= 4 and st["episodes"] == len(TASKS) and st["leased"] == 0 and st["failures"] == 0
    assert st["calls_in_flight_peak"] <= 4


def test_the_rolling_queue_does_not_wait_for_a_wave():
    """One episode per device is slow (0.4 s per action); the other 9 queued episodes run on
    the 2 other devices meanwhile instead of waiting for the slow one to finish a wave."""
    tasks = [TASKS[i] for i in (2, 3, 5, 8)] * 3

    class SlowFirst(AsyncLatencyDevice):
        def _delay(self, call):
            return 0.4 if self.slot == 0 and call == "act" else 0.005

    class Backend(LatencyBackend):
        def create(self, slot):
            return SlowFirst(self.inner.create(slot), self.cfg, slot)

    with DevicePool(Backend(PhoneWorldBackend()), PoolConfig(size=3)) as pool:
        trajs = runner().run(tasks, devices=pool)
        per_slot = [d["episodes"] for d in pool.stats()["per_device"]]     # in slot order
    assert all(t.valid and t.success for t in trajs)
    # the slow device ran one or two episodes; the fast two ran the rest (waves would give 4 each)
    assert per_slot[0] <= 2 and per_slot[1] + per_slot[2] >= 10


# ------------------------------------------------------------------ deadline
def test_deadline_masks_stragglers_as_timeout_and_returns_the_devices(in_process):
    # a 5% tail of 5 s device calls against a 3 s deadline: an episode that drew a slow call
    # cannot finish and is cut; the others finish (well under a second of device time each)
    tasks = TASKS[:6]
    lat = LatencyConfig(act_s=0.02, tail_p=0.05, tail_s=5.0, tail_calls=("act", "observe"), seed=11)
    deadline = 3.0
    with DevicePool(LatencyBackend(PhoneWorldBackend(), lat), PoolConfig(size=len(tasks))) as pool:
        devs = pool.lease_batch(tasks)
        r = runner(deadline_s=deadline)
        t0 = time.monotonic()
        trajs = r.run(tasks, devices=devs)
        wall = time.monotonic() - t0
        slow = [d._slot.device.waited_s >= lat.tail_s for d in devs]
        pool.release_batch(devs)
        st = pool.stats()
        assert st["leased"] == 0
        # the next batch leases the same devices again (their abandoned calls were cancelled)
        again = pool.lease_batch(tasks)
        assert len({getattr(d, "slot", None) for d in again} - {None}) == len(tasks)
        pool.release_batch(again)
    assert wall < lat.tail_s     # the deadline cut the 5 s calls instead of waiting for them
    cut = [i for i, t in enumerate(trajs) if t.info.get("straggler")]
    assert cut and len(cut) < len(tasks)
    assert r.last_run == {"stragglers": len(cut), "deadline_hit": True}
    for i, t in enumerate(trajs):
        if i in cut:
            assert (t.valid, t.invalid_reason, t.terminal_reward, t.total_reward) == (False, "timeout", 0.0, 0.0)
        else:
            assert outcome(t) == in_process[i]
    assert cut == [i for i, s in enumerate(slow) if s]     # exactly the episodes that drew a slow call
    assert st["failures"] == len(cut)                      # their devices, still waiting, count one failure


def test_update_finishes_by_its_deadline_and_reports_stragglers(tmp_path):
    """One PPO update on slow devices: 5% of resets, actions and observations take 5 s, the
    rollout deadline is 2 s. (Seed 2 makes device 7's reset slow, so one episode at least
    straggles whatever the sampled policy does.)"""

    import torch

    from navrl.experiments.pipeline import build_policy
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    torch.set_num_threads(1)
    preset = get_preset("quick-pointer")
    cfg = preset.train.override({"rollout.tasks_per_update": 4, "rollout.rollouts_per_task": 2,
                                 "rollout.max_steps": 6, "critic.critic_warmup_updates": 0,
                                 "rollout.rollout_deadline_s": 2.0})
    lat = LatencyConfig(act_s=0.02, tail_p=0.05, tail_s=5.0, seed=2)
    pool = DevicePool(LatencyBackend(PhoneWorldBackend(), lat), PoolConfig(size=8))
    tr = Trainer(build_policy(preset), cfg, tmp_path, devices=pool, log=False)
    t0 = time.monotonic()
    st = tr.train_step()
    update_s = time.monotonic() - t0
    pool.close()
    m = st.metrics
    assert m["time"]["rollout"] < lat.tail_s and update_s < 30     # cut by the deadline, not waiting 5 s
    assert m["stragglers"] >= 1 and m["masked_reasons"] == {"timeout": m["stragglers"]}
    assert m["masked"] == m["stragglers"] < 8
    assert m["samples"] > 0        # the update learned from the episodes that finished
