"""Device pool: rollback from the task snapshot, health probe, quarantine and replacement,
per-call timeouts with one reconnect-and-retry, accounting, and the runner on a pool."""
from __future__ import annotations

import pickle
import threading
import time

import pytest

from navrl.actions import Action
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import ExpertPlanner, RandomPlanner
from navrl.device.base import ActResult, Device, DeviceError, Health
from navrl.worlds.phone.sim import FaultConfig
from navrl.device.pool import (DeviceBackend, DeviceFarm, DevicePool, DeviceTimeout, FailedDevice, LeaseFailed,
                               PhoneWorldBackend, PoolConfig, PoolExhausted, step_devices)
from navrl.worlds.phone.judges import OracleJudge
from navrl.observation import Observation, UINode
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.worlds.phone.suites import suite_tasks


def outcome(tr) -> tuple:
    """Everything that decides training: validity, steps, verdicts, rewards."""
    return (tr.valid, tr.invalid_reason, tr.end, tr.success, tr.terminal_verdict, round(tr.terminal_reward, 6),
            tuple((s.output, s.action, s.verdict, round(s.reward, 6), s.screen_hash) for s in tr.steps))


def same_world(a: bytes, b: bytes) -> bool:
    """Two phone-world snapshots hold the same state (pickle bytes may differ in memo layout)."""
    sa, sb = pickle.loads(a), pickle.loads(b)
    da, db = dict(vars(sa)), dict(vars(sb))
    return da.pop("rng").getstate() == db.pop("rng").getstate() and da == db


def runner(planner=None):
    j = OracleJudge()
    return EpisodeRunner(planner or ExpertPlanner(), AccessibilityGrounder(), j, j, j)


# ------------------------------------------------------------------ fakes
class FakeDevice(Device):
    """A scriptable device: ``hang`` seconds of sleep per call name, ``healthy`` flag."""

    platform = "fake"

    def __init__(self, name: str = "d", healthy: bool = True, hang: dict | None = None, act_s: float = 0.0):
        self.name, self.healthy, self.hang, self.act_s = name, healthy, dict(hang or {}), act_s
        self.calls: list[str] = []
        self.state = 0
        self.closed = False

    def _maybe_hang(self, what: str) -> None:
        self.calls.append(what)
        s = self.hang.get(what, 0.0)
        if s:
            time.sleep(s)

    def observe(self) -> Observation:
        self._maybe_hang("observe")
        return Observation((UINode("n", "button", f"s{self.state}", (0, 0, 10, 10)),), None, (100, 100), "fake")

    def act(self, action: Action) -> ActResult:
        self._maybe_hang("act")
        if self.act_s:
            time.sleep(self.act_s)
        self.state += 1
        return ActResult(True)

    def snapshot(self) -> object:
        return self.state

    def restore(self, snapshot: object) -> None:
        self._maybe_hang("restore")
        self.state = int(snapshot)   # type: ignore[arg-type]

    def health(self) -> Health:
        self._maybe_hang("health")
        return Health(self.healthy, "ok" if self.healthy else "screen off")

    def close(self) -> None:
        self.closed = True


class FakeBackend(DeviceBackend):
    name = "fake"

    def __init__(self, make, reconnect=None, in_process: bool = False):
        self.make, self._reconnect, self.in_process = make, reconnect, in_process
        self.created: list[FakeDevice] = []
        self.reconnects = 0

    def create(self, slot: int) -> Device:
        d = self.make(slot)
        self.created.append(d)
        return d

    def task_snapshot(self, task) -> object:
        return 0

    def task_key(self, task):
        return "t"

    def reconnect(self, device, slot):
        self.reconnects += 1
        return self._reconnect(device, slot) if self._reconnect else None


# ------------------------------------------------------------------ phone-world pool
def test_lease_restores_the_task_snapshot_after_use():
    task = suite_tasks("train", 1)[0]
    fresh = task.make_device().snapshot()
    with DevicePool(PhoneWorldBackend(), PoolConfig(size=2)) as pool:
        d1 = pool.lease(task)
        assert d1.snapshot() == fresh
        d1.act(Action.swipe("up"))
        d1.act(Action.home())
        assert not same_world(d1.snapshot(), fresh)
        slot = d1.slot
        pool.release(d1)
        d2 = pool.lease(task)
        assert d2.slot == slot                  # the same device, rolled back
        assert same_world(d2.snapshot(), fresh)
        assert d2.observe().nodes == task.make_device().observe().nodes
        with pytest.raises(DeviceError) as e:    # the old lease is dead
            d1.observe()
        assert e.value.reason == "lease_released"
        pool.release(d2)
        st = pool.stats()
    assert st["devices"] == 1 and st["resets"] == 2 and st["episodes"] == 2 and st["failures"] == 0
    assert st["per_device"][0]["resets"] == 2 and st["mean_reset_ms"] > 0


def test_runner_on_a_pool_matches_fresh_devices():
    tasks = suite_tasks("train", 12)
    want = [outcome(t) for t in runner().run(tasks)]
    pool = DevicePool(PhoneWorldBackend(), PoolConfig(size=8))
    assert isinstance(pool, DeviceFarm)
    got1 = [outcome(t) for t in runner().run(tasks[:6], devices=pool)]
    got2 = [outcome(t) for t in runner().run(tasks[6:], devices=pool)]   # devices reused, rolled back
    assert got1 + got2 == want
    st = pool.stats()
    pool.close()
    assert st["devices"] == 6 and st["episodes"] == 12 and st["resets"] == 12 and st["leased"] == 0
    assert 0.0 < st["utilisation"] <= 1.0


def test_random_planner_on_a_pool_matches_fresh_devices():
    tasks = suite_tasks("train", 10, seed=3)
    with DevicePool(PhoneWorldBackend(), PoolConfig(size=6, call_timeout_s=None)) as pool:
        with pytest.raises(PoolExhausted):          # a batch larger than the pool is refused at once
            pool.lease_batch(tasks)
        got = [outcome(t) for t in runner(RandomPlanner(7)).run(tasks[:4], devices=pool)]
        got += [outcome(t) for t in runner(RandomPlanner(7)).run(tasks[4:], devices=pool)]
    # the planner's random stream continues across batches in one run but restarts here,
    # so compare per batch against per-batch fresh runs
    want = [outcome(t) for t in runner(RandomPlanner(7)).run(tasks[:4])]
    want += [outcome(t) for t in runner(RandomPlanner(7)).run(tasks[4:])]
    assert got == want


def test_injected_faults_are_masked_and_counted_against_the_device():
    ok = suite_tasks("train", 1)[0]
    lost = ok.with_(faults=FaultConfig(lose_at_step=1))
    plain = runner().run([lost, ok])
    with DevicePool(PhoneWorldBackend(), PoolConfig(size=2)) as pool:
        pooled = runner().run([lost, ok], devices=pool)
        st = pool.stats()
    assert [outcome(t) for t in pooled] == [outcome(t) for t in plain]
    assert not pooled[0].valid and pooled[0].invalid_reason == "device_lost" and pooled[1].valid
    assert st["failures"] == 1 and st["reconnects"] == 1     # device_lost got its one reconnect-and-retry
    bad = [d for d in st["per_device"] if d["failures"]]
    assert len(bad) == 1 and bad[0]["last_failure"] == "device_lost" and bad[0]["consecutive_failures"] == 1


# ------------------------------------------------------------------ health, quarantine, replacement
def test_unhealthy_device_is_quarantined_after_three_failures_and_replaced():
    # device 0 is always unhealthy; every later device is fine
    be = FakeBackend(lambda slot: FakeDevice(f"d{slot}", healthy=slot != 0))
    pool = DevicePool(be, PoolConfig(size=1, lease_attempts=3, call_timeout_s=1.0))
    with pytest.raises(LeaseFailed) as e:          # one slot only: three probes on device 0, all fail
        pool.lease("task")
    assert e.value.reason == "no_healthy_device"
    st = pool.stats()
    assert st["quarantined"] == 1 and st["replaced"] == 1 and st["failures"] == 3
    assert be.created[0].closed and be.created[0].calls.count("health") == 3
    d = pool.lease("task")                           # the replacement is healthy
    assert d.slot == 1 and len(be.created) == 2
    pool.release(d)
    st = pool.stats()
    assert st["devices"] == 1 and st["resets"] == 1
    q = [x for x in st["per_device"] if x["quarantined"]]
    assert len(q) == 1 and q[0]["slot"] == 0 and q[0]["last_failure"] == "unhealthy"


def test_failed_probe_moves_the_lease_to_another_device():
    be = FakeBackend(lambda slot: FakeDevice(f"d{slot}", healthy=slot != 0))
    with DevicePool(be, PoolConfig(size=3, call_timeout_s=1.0)) as pool:
        d = pool.lease("task")
        assert d.slot == 1
        st = pool.stats()
    per = {x["slot"]: x for x in st["per_device"]}
    assert per[0]["failures"] == 1 and per[0]["consecutive_failures"] == 1 and not per[0]["quarantined"]
    assert per[1]["resets"] == 1 and per[1]["failures"] == 0


def test_clean_episode_resets_the_consecutive_failure_count():
    be = FakeBackend(lambda slot: FakeDevice())
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=1.0)) as pool:
        for failure in ("device_lost", "device_lost", None, "device_lost", "device_lost"):
            pool.release(pool.lease("t"), failure=failure)
        st = pool.stats()
    assert st["quarantined"] == 0 and st["failures"] == 4
    assert st["per_device"][0]["consecutive_failures"] == 2


def test_pool_exhausted_when_every_device_is_busy():
    be = FakeBackend(lambda slot: FakeDevice())
    with DevicePool(be, PoolConfig(size=1, lease_timeout_s=0.2, call_timeout_s=1.0)) as pool:
        d = pool.lease("t")
        t0 = time.monotonic()
        with pytest.raises(PoolExhausted):
            pool.lease("t")
        assert 0.15 <= time.monotonic() - t0 < 1.0
    # a release wakes a waiting lease: the wait ends at the release, well before a long timeout
    # (with the 0.2 s one above it failed at load ~15, the timer's release coming too late)
    with DevicePool(be, PoolConfig(size=1, lease_timeout_s=10.0, call_timeout_s=1.0)) as pool:
        d = pool.lease("t")
        threading.Timer(0.05, d.close).start()
        t1 = time.monotonic()
        d2 = pool.lease("t")
        assert d2.slot == d.slot and time.monotonic() - t1 < 5.0


def test_lease_batch_hands_failed_devices_to_the_runner():
    be = FakeBackend(lambda slot: FakeDevice(healthy=False))
    with DevicePool(be, PoolConfig(size=2, call_timeout_s=1.0)) as pool:
        tasks = suite_tasks("train", 2)
        trajs = runner().run(tasks, devices=pool)
    assert [(t.valid, t.invalid_reason) for t in trajs] == [(False, "no_healthy_device")] * 2


# ------------------------------------------------------------------ timeouts, reconnect-and-retry
def test_timeout_then_reconnect_and_retry_succeeds():
    first = FakeDevice("hangs", hang={"observe": 5.0})
    spare = FakeDevice("spare")
    be = FakeBackend(lambda slot: first, reconnect=lambda dev, slot: spare)
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=0.3)) as pool:
        d = pool.lease("t")
        t0 = time.monotonic()
        obs = d.observe()
        dt = time.monotonic() - t0
        st = pool.stats()["per_device"][0]
    assert obs.nodes[0].label == "s0"
    assert 0.28 <= dt < 1.5
    assert st["timeouts"] == 1 and st["reconnects"] == 1 and be.reconnects == 1
    assert spare.calls == ["observe"]


def test_device_that_stops_answering_raises_timeout_after_one_retry():
    be = FakeBackend(lambda slot: FakeDevice(hang={"act": 5.0}), reconnect=lambda dev, slot: dev)
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=0.25)) as pool:
        d = pool.lease("t")
        t0 = time.monotonic()
        with pytest.raises(DeviceTimeout) as e:
            d.act(Action.home())
        dt = time.monotonic() - t0
        st = pool.stats()["per_device"][0]
    assert e.value.reason == "timeout" and d.last_error == "timeout"
    assert 0.45 <= dt < 1.5                      # two deadlines: the call and its one retry
    assert st["timeouts"] == 2 and st["reconnects"] == 1


def test_non_transport_errors_are_not_retried():
    class Broken(FakeDevice):
        def act(self, action):
            raise DeviceError("app_never_loads", "boom")
    be = FakeBackend(lambda slot: Broken(), reconnect=lambda dev, slot: dev)
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=1.0)) as pool:
        d = pool.lease("t")
        with pytest.raises(DeviceError) as e:
            d.act(Action.home())
        assert e.value.reason == "app_never_loads" and be.reconnects == 0


def test_connected_backend_steps_devices_in_parallel():
    be = FakeBackend(lambda slot: FakeDevice(act_s=0.2))
    with DevicePool(be, PoolConfig(size=8, call_timeout_s=2.0)) as pool:
        devs = pool.lease_batch(["t"] * 8)
        t0 = time.monotonic()
        res = step_devices(devs, [Action.home()] * 8, want_snapshot=True)
        dt = time.monotonic() - t0
        pool.release_batch(devs)
    assert [r[1] for r in res] == [1] * 8 and [r[0].nodes[0].label for r in res] == ["s1"] * 8
    assert dt < 0.8          # 8 x 0.2 s sequentially would be 1.6 s


def test_in_process_backend_runs_inline_and_reports_an_overrun():
    be = FakeBackend(lambda slot: FakeDevice(hang={"act": 0.3}), reconnect=lambda d, s: d, in_process=True)
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=0.1)) as pool:
        d = pool.lease("t")
        main = threading.get_ident()
        seen = []
        d._slot.device.restore = lambda snap: seen.append(threading.get_ident())
        d.restore(0)
        with pytest.raises(DeviceTimeout) as e:
            d.act(Action.home())
        st = pool.stats()["per_device"][0]
    assert seen == [main]                          # inline, no worker thread
    assert e.value.completed and st["timeouts"] == 1 and st["reconnects"] == 0   # it ran: not retried
    assert be.created[0].state == 1


def test_utilisation_is_busy_time_over_lifetime():
    be = FakeBackend(lambda slot: FakeDevice())
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=1.0)) as pool:
        d = pool.lease("t")
        time.sleep(0.3)
        pool.release(d)
        time.sleep(0.3)
        st = pool.stats()["per_device"][0]
    assert 0.25 <= st["busy_s"] < 0.5
    assert 0.35 < st["utilisation"] < 0.65


def test_failed_device_raises_its_reason():
    d = FailedDevice("device_host_lost", "gone")
    for call in (d.observe, d.snapshot):
        with pytest.raises(DeviceError) as e:
            call()
        assert e.value.reason == "device_host_lost"
    assert not d.health().ok


def test_restore_has_its_own_longer_deadline():
    be = FakeBackend(lambda slot: FakeDevice(hang={"restore": 0.4, "observe": 0.4}))
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=0.2, restore_timeout_s=2.0)) as pool:
        d = pool.lease("t")                   # a 0.4 s snapshot load fits the restore deadline
        assert pool.stats()["per_device"][0]["timeouts"] == 0
        with pytest.raises(DeviceTimeout):    # a 0.4 s observation misses the 0.2 s call deadline
            d.observe()
        assert pool.stats()["per_device"][0]["timeouts"] == 1


# ------------------------------------------------------------------ affinity
class AppBackend(FakeBackend):
    """Tasks are app names; a device restored to the app it already runs resets in place."""

    def task_snapshot(self, task) -> object:
        return ord(task)

    def task_key(self, task):
        return task

    def affinity_key(self, snapshot):
        return snapshot


def test_a_lease_gets_an_idle_device_that_last_ran_its_app():
    with DevicePool(AppBackend(lambda slot: FakeDevice()), PoolConfig(size=8, call_timeout_s=2.0)) as pool:
        first = pool.lease_batch(["a", "b", "c", "d"])          # four new devices, one per app
        home = {t: d.slot for t, d in zip("abcd", first)}
        pool.release_batch(first)
        again = pool.lease_batch(["d", "c", "b", "a"])
        assert [d.slot for d in again] == [home[t] for t in "dcba"]
        pool.release_batch(again)
        # a second lease of an app in one batch gets a new device, not one that keeps another app warm
        twice = pool.lease_batch(["b", "b", "a"])
        assert [d.slot for d in twice] == [home["b"], 4, home["a"]]
        pool.release_batch(twice)
        assert pool.stats()["devices"] == 5
    # a full pool hands over a device whose app another idle device also runs before a lone one
    with DevicePool(AppBackend(lambda slot: FakeDevice()), PoolConfig(size=3, call_timeout_s=2.0)) as pool:
        ds = pool.lease_batch(["a", "a", "b"])
        ran = {d.slot: t for d, t in zip(ds, "aab")}
        pool.release_batch(ds)
        (e,) = pool.lease_batch(["e"])
        assert ran[e.slot] == "a"            # "b" stays warm on its only device
        pool.release_batch([e])
        (b,) = pool.lease_batch(["b"])
        assert ran[b.slot] == "b"


def test_without_affinity_an_idle_device_is_reused_before_a_new_one():
    with DevicePool(FakeBackend(lambda slot: FakeDevice()), PoolConfig(size=8, call_timeout_s=2.0)) as pool:
        for _ in range(3):
            pool.release_batch(pool.lease_batch(["t", "t"]))
        assert pool.stats()["devices"] == 2


@pytest.mark.parametrize("order, most, fifo_least", [
    ("abcbcacabbca", 2, 6),     # first come, first served switches apps often (measured: 2 and 8)
    ("aaaabbbbcccc", 1, 4),     # sibling rollouts one after another, as the trainer orders them (1 and 5)
])
def test_a_rolling_queue_gives_a_freed_device_a_task_of_its_own_app(monkeypatch, order, most, fifo_least):
    """12 episodes of 3 tasks on 3 devices: the queue starts one episode per task first and
    hands a freed device a waiting episode of the task it just ran (an in-place reset for a
    browser page) before first-come order, and the outcomes are those of fresh devices."""
    three = dict(zip("abc", suite_tasks("train", 3, seed=8)))
    tasks = [three[k] for k in order]
    want = [outcome(t) for t in runner().run(tasks)]

    class Tracked(PhoneWorldBackend):
        def __init__(self):
            super().__init__()
            self.restores: list[tuple[int, int]] = []

        def affinity_key(self, snapshot):
            return hash(snapshot)

        def create(self, slot):
            dev, log = super().create(slot), self.restores

            class Dev(type(dev)):   # records which snapshot each slot restores
                def restore(self, snapshot):
                    log.append((slot, hash(snapshot)))
                    return super().restore(snapshot)
            dev.__class__ = Dev
            return dev

    def switches(restores):
        last: dict[int, int] = {}
        n = 0
        for slot, key in restores:
            n += slot in last and last[slot] != key
            last[slot] = key
        return n

    counts = {}
    for mode in ("fifo", "affinity", "idle"):
        be = Tracked()
        with DevicePool(be, PoolConfig(size=3, call_timeout_s=None)) as pool:
            if mode == "fifo":
                monkeypatch.setattr(pool, "pick_next", lambda used, waiting: 0)
                monkeypatch.setattr(pool, "first_wave", lambda tasks, n: list(range(n)))
            if mode == "idle":      # a farm that lets every freed device idle: no episode is lost
                monkeypatch.setattr(pool, "pick_next", lambda used, waiting: None)
            got = [outcome(t) for t in runner().run(tasks, devices=pool)]
            st = pool.stats()
        assert got == want and st["devices"] == 3 and st["episodes"] == 12
        counts[mode] = switches(be.restores)
    assert counts["affinity"] <= most and counts["fifo"] >= fifo_least, counts


@pytest.mark.parametrize("choice", ["affinity", "idle"])
def test_a_rolling_queue_on_connected_devices_runs_every_episode(monkeypatch, choice):
    """Connected devices answer on the pool's loop, so the last running episodes can end as
    their answers land (a step budget) while episodes still wait for a device (here all but
    one device idles when the farm's pick_next lets freed devices go): every queued episode
    still runs."""
    three = suite_tasks("train", 3, seed=8)
    tasks = [t for t in three for _ in range(4)]

    class Connected(PhoneWorldBackend):
        in_process = False

        def affinity_key(self, snapshot):
            return hash(snapshot)

    j = OracleJudge()
    run = EpisodeRunner(RandomPlanner(3), AccessibilityGrounder(), j, j, j, config=RunnerConfig(max_steps=2))
    with DevicePool(Connected(), PoolConfig(size=3, call_timeout_s=10.0)) as pool:
        if choice == "idle":
            monkeypatch.setattr(pool, "pick_next", lambda used, waiting: None)
        got = run.run(tasks, devices=pool)
        assert pool.stats()["episodes"] == 12
    assert [len(t.steps) for t in got] == [2] * 12 and all(t.valid for t in got)


class _Held:
    """A leased device stand-in for pick_next: the pool slot it holds."""

    def __init__(self, dev):
        self._slot = dev._slot


def test_the_first_wave_starts_one_task_per_app_and_apps_idle_devices_show_first():
    with DevicePool(AppBackend(lambda slot: FakeDevice()), PoolConfig(size=4, call_timeout_s=2.0)) as pool:
        assert pool.first_wave(list("aaaabbbbccccdddd"), 4) == [0, 4, 8, 12]
        assert pool.first_wave(list("aaaa"), 4) == [0, 1, 2, 3]
        pool.release_batch(pool.lease_batch(["c", "b"]))
        # the idle devices' apps first (their leases take them), then one per app before seconds
        assert pool.first_wave(list("aaaabbbbcccc"), 4) == [4, 8, 0, 5]
    with DevicePool(FakeBackend(lambda slot: FakeDevice()), PoolConfig(size=4, call_timeout_s=2.0)) as pool:
        assert pool.first_wave(list("aabb"), 2) == [0, 1]        # no affinity: first come


def test_a_freed_device_idles_rather_than_load_an_app_a_leased_device_takes_next():
    with DevicePool(AppBackend(lambda slot: FakeDevice()), PoolConfig(size=3, call_timeout_s=2.0)) as pool:
        da, db, dc = pool.lease_batch(["a", "b", "c"])
        used = _Held(da)
        assert pool.pick_next(used, ["b", "a"]) == 1           # its own app
        assert pool.pick_next(used, ["b", "c"]) is None         # b and c wait for their own devices
        assert pool.pick_next(used, ["c", "b", "b", "b"]) is None   # three b waiting: cheaper to wait
        assert pool.pick_next(used, ["b", "d"]) == 1            # no device shows d
        pool.release_batch([dc])
        assert pool.pick_next(used, ["b", "c"]) == 1            # an idle device shows c: its lease takes it
        pool.release_batch([da, db])


def test_spare_devices_keep_their_apps_and_at_most_size_are_leased():
    be = AppBackend(lambda slot: FakeDevice())
    with DevicePool(be, PoolConfig(size=2, spare=2, call_timeout_s=2.0, lease_timeout_s=0.3)) as pool:
        first = pool.lease_batch(["a", "b"])
        home = {t: d.slot for t, d in zip("ab", first)}
        pool.release_batch(first)
        other = pool.lease_batch(["c", "d"])                    # new devices: a and b stay warm
        assert {d.slot for d in other}.isdisjoint(home.values())
        with pytest.raises(PoolExhausted):                      # two leased: a third waits, then gives up
            pool.lease("a")
        pool.release_batch(other)
        again = pool.lease_batch(["b", "a"])
        assert [d.slot for d in again] == [home["b"], home["a"]]
        pool.release_batch(again)
        pool.release_batch(pool.lease_batch(["e"]))             # four held: e takes over an idle one
        assert pool.stats()["devices"] == 4
    with pytest.raises(ValueError):
        PoolConfig(spare=-1).validate()
