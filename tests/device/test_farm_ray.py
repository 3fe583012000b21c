"""Ray device hosts on a local Ray instance (2 CPUs): outcomes identical to the in-process
run, host loss masks exactly that host's in-flight episodes, training carries on."""
from __future__ import annotations

import logging
import time

import pytest

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import ExpertPlanner
from navrl.device.base import DeviceError
from navrl.worlds.phone.sim import FaultConfig
from navrl.device.pool import DevicePool
from navrl.worlds.phone.judges import OracleJudge
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.worlds.phone.suites import suite_tasks

ray = pytest.importorskip("ray")

from navrl.device.ray_farm import HOST_LOST, FarmConfig, RayFarm, RemoteDevice, make_device_factory  # noqa: E402


def outcome(tr) -> tuple:
    return (tr.valid, tr.invalid_reason, tr.end, tr.success, tr.terminal_verdict, round(tr.terminal_reward, 6),
            tuple((s.output, s.action, s.verdict, round(s.reward, 6), s.screen_hash) for s in tr.steps))


def runner(**cfg):
    j = OracleJudge()
    return EpisodeRunner(ExpertPlanner(), AccessibilityGrounder(), j, j, j, config=RunnerConfig(**cfg))


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, resources={"device_host": 2},
             _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def farm(local_ray):
    # half a CPU per host, so a third host (the factory test) still fits on 2 CPUs
    f = RayFarm(FarmConfig(hosts=2, devices_per_host=8, num_cpus_per_host=0.5,
                           resources_per_host=(("device_host", 1),)))
    yield f
    f.close()


TASKS = suite_tasks("train", 16)


@pytest.fixture(scope="module")
def in_process():
    return [outcome(t) for t in runner().run(TASKS)]


def test_two_hosts_give_the_in_process_outcomes(farm, in_process):
    trajs = runner().run(TASKS, devices=farm)
    assert [outcome(t) for t in trajs] == in_process
    assert sum(t.valid for t in trajs) == 16 and sum(t.success for t in trajs) >= 14
    # again on the same (now rolled-back) devices
    assert [outcome(t) for t in runner().run(TASKS, devices=farm)] == in_process
    st = farm.stats()
    per = {h["host"]: h["pool"] for h in st["per_host"]}
    assert per[0]["episodes"] >= 16 and per[1]["episodes"] >= 16          # 8 + 8 per batch
    assert per[0]["devices"] == 8 and per[1]["devices"] == 8
    assert st["failures"] == 0 and st["masked_host_lost"] == 0


def test_a_batch_twice_the_farm_rolls_over_both_hosts(farm, in_process):
    before = {h["host"]: h["pool"]["episodes"] for h in farm.stats()["per_host"]}
    trajs = runner().run(TASKS + TASKS, devices=farm)        # 32 episodes on 2 x 8 devices
    assert [outcome(t) for t in trajs] == in_process + in_process
    st = farm.stats()
    per = {h["host"]: h["pool"] for h in st["per_host"]}
    # each finished episode's next one leased on that same host: neither host took more
    # than its 8 devices, and both ran their share
    assert per[0]["devices"] == 8 and per[1]["devices"] == 8
    assert sum(per[k]["episodes"] - before[k] for k in (0, 1)) == 32
    assert min(per[k]["episodes"] - before[k] for k in (0, 1)) >= 8
    assert st["failures"] == 0 and st["masked_host_lost"] == 0


def test_injected_faults_are_masked_as_in_process(farm):
    tasks = [TASKS[0].with_(faults=FaultConfig(lose_at_step=2)), TASKS[1],
             TASKS[2].with_(faults=FaultConfig(app_never_loads=1.0)), TASKS[3]]
    want = [outcome(t) for t in runner().run(tasks)]
    got = runner().run(tasks, devices=farm)
    assert [outcome(t) for t in got] == want
    assert [t.invalid_reason for t in got] == ["device_lost", None, "app_never_loads", None]


def test_lazy_screenshots_are_fetched_from_the_host(farm):
    [dev] = farm.lease_batch(TASKS[:1])
    try:
        assert isinstance(dev, RemoteDevice) and dev.observe()._png is None
        local = TASKS[0].make_device().observe().screenshot
        assert dev.observe().screenshot.tobytes() == local.tobytes()
    finally:
        farm.release_batch([dev])
    with pytest.raises(DeviceError) as e:      # a returned device answers nothing
        dev.health()
    assert e.value.reason == "lease_released"
    want = runner(record_frames=True).run(TASKS[:3])
    got = runner(record_frames=True).run(TASKS[:3], devices=farm)
    from PIL import Image
    import io
    px = lambda b: Image.open(io.BytesIO(b)).convert("RGB").tobytes()   # noqa: E731
    assert [[px(f) for f in t.frames] for t in got] == [[px(f) for f in t.frames] for t in want]
    assert sum(len(t.frames) for t in got) > 10


def _kill_after_first_step(n_eps: int, kill):
    calls = {"n": 0}

    def on_step(k: int) -> None:
        calls["n"] += k
        if calls["n"] == n_eps:
            kill()
    return on_step


def test_killed_host_masks_exactly_its_episodes_and_training_carries_on(farm, in_process, caplog):
    tasks = TASKS[:8]
    want = in_process[:8]
    assert all(len(o[-1]) >= 3 for o in want)          # every episode is still running after step 1
    losses0, masked0 = farm.host_losses, farm.masked_host_lost
    old = farm.clients[0].incarnation

    def kill() -> None:
        farm.kill_host(0)                               # ray.kill; Ray restarts the actor
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:              # wait until the restart is visible
            try:
                if ray.get(farm.clients[0].handle.info.remote(), timeout=30)["incarnation"] != old:
                    return
            except ray.exceptions.RayActorError:
                time.sleep(0.1)
        raise AssertionError("host 0 did not restart")

    with caplog.at_level(logging.WARNING, logger="navrl.device.ray_farm"):
        devs = farm.lease_batch(tasks)
        hosts = [d.host for d in devs]
        # lockstep, so that every episode is in its second step when the kill lands
        trajs = runner(pipeline=False).run(tasks, devices=devs, on_step=_kill_after_first_step(8, kill))
        farm.release_batch(devs)
    assert hosts == [0, 1] * 4
    masked = [i for i, t in enumerate(trajs) if not t.valid]
    assert masked == [0, 2, 4, 6]
    assert all(trajs[i].invalid_reason == HOST_LOST and trajs[i].length == 2 for i in masked)   # lost in step 2
    assert all(trajs[i].total_reward == 0.0 for i in masked)
    assert [outcome(trajs[i]) for i in (1, 3, 5, 7)] == [want[i] for i in (1, 3, 5, 7)]
    assert farm.masked_host_lost - masked0 == 4 and farm.host_losses - losses0 == 1
    assert any("masked 4 trajectories as device_host_lost" in r.getMessage() for r in caplog.records)
    # the restarted host serves the next batch: training carries on
    again = runner().run(tasks, devices=farm)
    assert [outcome(t) for t in again] == want


def test_host_process_dying_mid_batch_masks_its_in_flight_episodes(farm, in_process):
    tasks = TASKS[8:16]
    want = in_process[8:16]
    masked0 = farm.masked_host_lost
    trajs = runner(pipeline=False).run(tasks, devices=farm,
                                       on_step=_kill_after_first_step(8, lambda: farm.clients[1].handle.crash.remote()))
    masked = [i for i, t in enumerate(trajs) if not t.valid]
    assert masked == [1, 3, 5, 7] and {trajs[i].invalid_reason for i in masked} == {HOST_LOST}
    assert [outcome(trajs[i]) for i in (0, 2, 4, 6)] == [want[i] for i in (0, 2, 4, 6)]
    assert farm.masked_host_lost - masked0 == 4
    assert [outcome(t) for t in runner().run(tasks, devices=farm)] == want


def test_latency_wrapped_hosts_give_the_in_process_outcomes_and_cut_stragglers(local_ray, in_process):
    from navrl.device.latency import LatencyBackend, LatencyConfig
    from navrl.device.inprocess import PhoneWorldBackend
    lat = LatencyConfig(act_s=0.05, reset_s=0.05, dist="exponential", seed=3)
    f = RayFarm(FarmConfig(hosts=2, devices_per_host=8, num_cpus_per_host=0.25,
                           backend=LatencyBackend(PhoneWorldBackend(), lat)))
    try:
        for pipeline in (True, False):
            assert [outcome(t) for t in runner(pipeline=pipeline).run(TASKS, devices=f)] == in_process
        pools = [h["pool"] for h in f.stats()["per_host"]]
        assert [p["calls_in_flight_peak"] for p in pools] == [8, 8]    # each host's devices waited together
    finally:
        f.close()
    # a 20% tail of 12 s calls against a 5 s deadline: the stragglers are cut, their hosts
    # cancel the waiting calls, and the next batch is served at once (5 s, not less: at load ~4
    # the untailed episodes' 0.02 s steps on 0.25-CPU hosts took over 3 s and were cut too)
    slow = LatencyConfig(act_s=0.02, tail_p=0.2, tail_s=12.0, tail_calls=("act",), seed=5)
    f = RayFarm(FarmConfig(hosts=2, devices_per_host=4, num_cpus_per_host=0.25,
                           backend=LatencyBackend(PhoneWorldBackend(), slow)))
    try:
        tasks = TASKS[:8]
        r = runner(deadline_s=5.0)
        t0 = time.monotonic()
        trajs = r.run(tasks, devices=f)
        wall = time.monotonic() - t0
        cut = [i for i, t in enumerate(trajs) if t.info.get("straggler")]
        assert wall < slow.tail_s - 1.0 and cut and len(cut) == r.last_run["stragglers"] < 8
        assert all(trajs[i].invalid_reason == "timeout" for i in cut)
        assert all(outcome(t) == in_process[i] for i, t in enumerate(trajs) if i not in cut)
        t0 = time.monotonic()
        devs = f.lease_batch(tasks)      # the hosts are not stuck behind the abandoned 12 s calls
        assert time.monotonic() - t0 < 4.0 and all(isinstance(d, RemoteDevice) for d in devs)
        f.release_batch(devs)
        assert f.stats()["failures"] >= 1          # the abandoned calls counted against their devices
    finally:
        f.close()


def test_make_device_factory_selects_in_process_or_ray(local_ray):
    pool = make_device_factory(None, devices=8)
    assert isinstance(pool, DevicePool) and pool.cfg.size == 8
    assert pool(TASKS[:4]) is pool                    # usable as devices_factory(batch_tasks)
    assert [outcome(t) for t in runner().run(TASKS[:4], devices=pool(TASKS[:4]))] == \
        [outcome(t) for t in runner().run(TASKS[:4])]
    pool.close()
    assert make_device_factory(None).cfg.size == 512
    f = make_device_factory("local", devices=5, hosts=1, screenshots="eager")   # joins the running instance
    try:
        assert isinstance(f, RayFarm) and f.cfg.devices_per_host == 5 and len(f.clients) == 1
        [dev] = f.lease_batch(TASKS[:1])
        assert dev.observe()._png == TASKS[0].make_device().observe().png     # shipped with the observation
        f.release_batch([dev])
        trajs = runner().run(TASKS[:5], devices=f)
        assert [outcome(t) for t in trajs] == [outcome(t) for t in runner().run(TASKS[:5])]
    finally:
        f.close()


def test_navrl_eval_with_ray(local_ray, tmp_path, capsys):
    from navrl.cli.main import main
    rc = main(["eval", "--suite", "test-ios", "-n", "4", "--batch", "4", "--ray", "--hosts", "1",
               "--out", str(tmp_path / "ev")])
    out = capsys.readouterr().out
    assert rc == 0 and "success: 100.0% (4/4)" in out
    assert "device farm: 1 hosts, 4 devices, 4 resets, 0 device failures, 0 masked (device_host_lost)" in out
    assert ray.is_initialized()          # joined the running instance, did not shut it down
