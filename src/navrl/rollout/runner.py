"""The batched episode runner (docs/design.md §1): plan, ground, act, judge, for many episodes at once.

Planner calls are batched across the episodes ready to plan, and the device actions of a
round are started together; what a step does and earns is :mod:`navrl.rollout.step` (the
Gymnasium env plays by the same rules). Infrastructure failures (DeviceError,
JudgeUnavailable) end an episode as ``valid=False`` with its reason; no reward touches it.

Devices behind a farm (connected pools, Ray hosts) answer later, as futures: by default the
runner is *pipelined*, planning the episodes whose devices have answered while the others
still wait, so the learner's CPU work overlaps the devices' latency and a slow device delays
only its own episode. ``RunnerConfig(pipeline=False)`` steps in lockstep instead. In-process
devices answer at once and step identically in both modes. ``deadline_s`` bounds a run: the
episodes still running then are masked as ``timeout`` stragglers.

A batch may hold more episodes than the farm has devices (``farm.capacity``): the first
``capacity`` start at once and each finished episode hands its device back to the farm and
starts the next one waiting (a rolling queue: 64 rollouts run on 16 browser pages without
waiting for the slowest episode of a wave).
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import queue
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generator

from navrl.agent.grounders.base import Grounder
from navrl.api.client import APIRequestError, APIUnavailable
from navrl.agent.planner import Planner, PlannerContext
from navrl.device.base import Device, DeviceError
from navrl.device.pool import lease_outcome, start_steps, step_outcome
from navrl.imaging import phash64
from navrl.judge.base import AskJudge, JudgeUnavailable, StepJudge, TerminalJudge
from navrl.judge.rewards import DEFAULT_REWARDS, RewardConfig
from navrl.judge.verdicts import EndReason
from navrl.lru import BoundedCache
from navrl.observation import Observation
from navrl.rollout.episode import Episode
from navrl.rollout.records import Trajectory
# ui_hash's home is navrl.observation; imported here too for callers that import it from the runner
from navrl.rollout.step import Stepper, resume, ui_hash  # noqa: F401
from navrl.tasks.task import Task
from navrl.tasks.user import ProfileUser

if TYPE_CHECKING:  # pragma: no cover
    from navrl.device.pool import DeviceFarm


@dataclass
class RunnerConfig:
    record_frames: bool = False
    """Keep a PNG of every screen (for filmstrips and replay)."""
    phash: bool = False
    """Compute the 64-bit perceptual hash of every before-screen (GiGPPO needs it)."""
    max_steps: int | None = None
    """Cap on every task's step budget (a task's own smaller budget still applies)."""
    pipeline: bool = True
    """Plan each episode as soon as its device has answered, while other devices still wait
    (farms only: in-process devices answer at once, so both modes step them identically).
    False: lockstep, every round waits for all devices; the planner's batches then do not
    depend on device timing (bit-reproducible sampled rollouts on a farm), at the price of
    waiting for the slowest device every step."""
    round_s: float | None = 0.02
    """Pipelined runs: the time one round spends landing answers (judging their steps, and
    waiting for those still to come once one has come) before it plans those episodes and
    starts their next actions, so the learner's work overlaps the devices' waits instead of
    following them and the planner gets every episode ready within the round in one batch.
    Longer rounds give the planner bigger batches (an LLM planner on a GPU may want 0.5 s);
    None lands every answer already there."""
    deadline_s: float | None = None
    """Seconds one run (one rollout batch, leases included) may take; None waits for every
    episode. At the deadline the runner stops waiting: episodes still running are masked as
    ``timeout`` (infrastructure: ``valid=False``, never scored; ``info["straggler"]``), their
    pending device calls are abandoned and the devices go back to the farm. The run returns
    within one round of learner work after the deadline."""
    gc_gen0: int | None = 100_000
    """During a run, Python's cyclic garbage collector starts a collection after this many new
    container objects instead of its default 700 (the old thresholds come back after the run;
    None leaves them alone). A learner's heap is large (trajectories, models, caches: 700k
    objects after one 4,096-episode batch), and every collection that reaches the old
    generation walks all of it while no device gets its next action: at the default, 512
    devices lost 2.5 s of an 11.6 s run to ~700 collections, at 100,000 0.2 s to 3."""
    hindsight: bool = False
    """Relabel each episode that declared completion without reaching its goal with the goal it
    did reach, where its task names one (:class:`~navrl.rollout.step.Stepper`; ``info["hindsight"]``).
    Needs the final device snapshot: judges that take snapshots (the phone world's oracle)."""


class EpisodeRunner:
    def __init__(self, planner: Planner, grounder: Grounder, step_judge: StepJudge, ask_judge: AskJudge,
                 terminal_judge: TerminalJudge, user: ProfileUser | None = None,
                 rewards: RewardConfig = DEFAULT_REWARDS, config: RunnerConfig | None = None):
        self.planner, self.grounder = planner, grounder
        self.step_judge, self.ask_judge, self.terminal_judge = step_judge, ask_judge, terminal_judge
        self.user = user or ProfileUser()
        self.rewards = rewards
        self.cfg = config or RunnerConfig()
        self.timings = {"device": 0.0, "planner": 0.0, "grounder": 0.0, "judge": 0.0, "total": 0.0}
        self._phash: BoundedCache[tuple[str, str], int] = BoundedCache(20_000)
        self.last_run: dict = {"stragglers": 0, "deadline_hit": False}
        """Of the last :meth:`run`: ``stragglers`` (episodes masked at the deadline), ``deadline_hit``."""
        self._plan_call_s = 0.0
        self._shots: cf.ThreadPoolExecutor | None = None    # reads screens to hash side by side
        """Seconds a planner call takes (moving average): the longest a pipelined round waits
        for more answers to plan with the first one."""

    def run(self, tasks: list[Task], devices: "list[Device] | DeviceFarm | None" = None,
            groups: list[int] | None = None, on_step: Callable[[int], None] | None = None) -> list[Trajectory]:
        """Run one episode per task side by side.

        ``devices``: one device per task, or a farm (anything with ``lease_batch`` and
        ``release_batch``: :class:`navrl.device.pool.DevicePool`, the Ray farm) that leases
        them for this batch and gets them back at the end; default: ``task.make_device()``.
        ``last_run`` then says how many episodes were stragglers cut at the deadline.
        """
        t_start = time.perf_counter()
        tm = self.timings
        deadline = time.monotonic() + self.cfg.deadline_s if self.cfg.deadline_s is not None else None
        self.last_run = {"stragglers": 0, "deadline_hit": False}
        farm = devices if hasattr(devices, "lease_batch") else None
        refill = None
        if farm is not None:
            t0 = time.perf_counter()
            start = getattr(farm, "start_leases", None)
            if start is not None and self.cfg.pipeline:   # each episode starts once its device is ready
                def lease(ts: list[Task]) -> list[Any]:
                    return start(ts)
            else:
                def lease(ts: list[Task]) -> list[Any]:
                    return farm.lease_batch(ts) if deadline is None else farm.lease_batch(ts, deadline=deadline)
            cap = getattr(farm, "capacity", None)
            first = len(tasks) if cap is None else min(len(tasks), max(1, int(cap)))
            wave = list(range(first))
            pick = getattr(farm, "first_wave", None)
            if first < len(tasks) and pick is not None:   # the farm says which to start first
                wave = pick(tasks, first)
            devices = [None] * len(tasks)
            for i, d in zip(wave, lease([tasks[i] for i in wave])):
                devices[i] = d
            if first < len(tasks):   # a rolling queue: finished episodes hand their devices on
                hand_on = getattr(farm, "hand_on", None)   # a Ray farm leases on the freed device's host

                def refill(task: Task, used: Any) -> Any:
                    if hand_on is not None and used is not None:
                        return hand_on(task, used)
                    if used is not None:
                        farm.release_batch([used])
                    return lease([task])[0]
            tm["device"] += time.perf_counter() - t0
        gc_prev = _gc_pace(self.cfg.gc_gen0)
        try:
            trajs = self._run(tasks, devices, groups, on_step, deadline, refill,  # type: ignore[arg-type]
                              getattr(farm, "pick_next", None), farm.release_batch if farm is not None else None)
        finally:
            _gc_restore(gc_prev)
            if farm is not None:   # leases still pending were cancelled: the farm takes those back itself
                farm.release_batch([d for d in devices  # type: ignore[union-attr]
                                    if d is not None and not isinstance(d, cf.Future)])
        tm["total"] += time.perf_counter() - t_start
        return trajs

    def _run(self, tasks: list[Task], devices: list[Any] | None, groups: list[int] | None,
             on_step: Callable[[int], None] | None, deadline: float | None,
             refill: Callable[[Task, Any], Any] | None = None,
             choose: Callable[[Any, list[Task]], int] | None = None,
             release: Callable[[list[Any]], None] | None = None) -> list[Trajectory]:
        """``devices``: one per task (or a future of it, replaced in the list once it lands;
        None for an episode queued until ``refill(task, finished_device)`` leases it one;
        ``choose(finished_device, queued_tasks)`` picks which queued task goes next;
        ``release(devices)`` gives a finished episode's device back to its farm at once when
        no queued episode takes it over)."""
        step = self._stepper()
        if devices is None:
            devices = [task.make_device() for task in tasks]
        eps = [Episode(task, None if isinstance(devices[i], cf.Future) else devices[i],  # type: ignore[arg-type]
                       groups[i] if groups is not None else i) for i, task in enumerate(tasks)]
        flight = _Flight(self, on_step, step.wants_snapshots(), refill, choose, release)
        flight.lease(eps, devices)
        try:
            self._loop(eps, step, flight, deadline)
        except APIRequestError as e:
            # a rejected request (wrong key, bad request) ends the batch: hand the episodes that
            # did finish to the caller on the exception, so none of them is lost
            e.completed = [ep.traj for ep in eps if ep.done]  # type: ignore[attr-defined]
            raise
        finally:   # on any error, nothing stays in flight (pending leases go back to the farm)
            flight.abandon()
            for ep in eps:
                ep.record_task()
        return [ep.traj for ep in eps]

    def _loop(self, eps: list[Episode], step: Stepper, flight: "_Flight", deadline: float | None) -> None:
        while True:
            if flight.queued:
                flight.hand_on(eps)
                if not flight and all(ep.done for ep in eps if id(ep) not in flight.queued):
                    flight.restart()    # the farm let every freed device go idle with episodes queued
            flight.free(eps)
            if not flight and all(ep.done for ep in eps):
                return
            if deadline is not None and time.monotonic() >= deadline:
                self._cut(eps, flight)
                return
            if flight:
                busy = flight.busy
                idle = any(not ep.done and id(ep) not in busy and id(ep) not in flight.queued for ep in eps)
                # lockstep: wait for every device; pipelined: for the first answer when no
                # episode is ready, else only take the answers already there, for one round's time
                # an episode ready alone waits for others at most one planner call's time (then
                # one call plans them all for about what its own call would have cost)
                flight.collect(deadline, "all" if not self.cfg.pipeline else ("ready" if idle else "first"),
                               self.cfg.round_s, min(self.cfg.round_s or 0.0, self._plan_call_s))
                if deadline is not None and time.monotonic() >= deadline:
                    continue
            busy, queued = flight.busy, flight.queued
            ready = [ep for ep in eps if not ep.done and id(ep) not in busy and id(ep) not in queued]
            if ready:
                self._round(ready, step, flight)
            elif not flight and not flight.queued:
                return      # (episodes still queued: the next turn hands them a device)

    def _round(self, ready: list[Episode], step: Stepper, flight: "_Flight") -> None:
        """Plan the ready episodes in one batch, run each step up to its device action, and
        start those actions together."""
        tm = self.timings
        for ep in ready:
            ep.look()
        ctxs = [PlannerContext(ep.task, ep.obs, list(ep.plans), ep.remaining, list(ep.memory.qa), ep.device,
                               ep.seen_texts(), ep.used_apps()) for ep in ready]
        if self.cfg.phash:
            self._read_screens([ep.obs for ep in ready if ep.obs is not None])
        t0 = time.perf_counter()
        try:
            outs = self.planner.plan(ctxs)
        except APIUnavailable:   # an API planner that stays unreachable: infrastructure, masked
            for ep in ready:
                self._invalidate(ep, "planner_unavailable")
            return
        dt = time.perf_counter() - t0
        tm["planner"] += dt
        self._plan_call_s = dt if not self._plan_call_s else 0.7 * self._plan_call_s + 0.3 * dt
        # each episode's step runs up to its device action; then the device actions start
        # together (remote hosts and real devices in parallel); each step is judged when its
        # device has answered
        acting: list[tuple[Episode, Generator, object]] = []
        for ep, out in zip(ready, outs):
            gen = step.advance(ep, out)
            action = self._guard(ep, lambda g=gen: next(g))
            if action is not None:
                acting.append((ep, gen, action))
            elif flight.on_step is not None:
                flight.on_step(1)
        if acting:
            flight.start([ep for ep, _, _ in acting], [g for _, g, _ in acting], [a for _, _, a in acting])

    def _cut(self, eps: list[Episode], flight: "_Flight") -> None:
        """The deadline: abandon the device calls in flight and mask every episode still
        running as a ``timeout`` straggler."""
        flight.abandon()
        n = 0
        for ep in eps:
            if not ep.done:
                self._invalidate(ep, "timeout")
                ep.traj.info["straggler"] = True
                n += 1
        self.last_run.update(stragglers=n, deadline_hit=True)

    def _guard(self, ep: Episode, stage: Callable[[], object]) -> object | None:
        """Run one stage of an episode's step; infrastructure failures mask the episode."""
        try:
            return stage()
        except StopIteration:
            return None
        except DeviceError as e:
            self._invalidate(ep, e.reason)
        except JudgeUnavailable:
            self._invalidate(ep, JudgeUnavailable.reason)
        return None

    # ------------------------------------------------------------------ one step
    def wants_snapshots(self) -> bool:
        """Whether its steps take device snapshots (a judge reads them: :meth:`Stepper.wants_snapshots`)."""
        return self._stepper().wants_snapshots()

    def _stepper(self) -> Stepper:
        """The step rules with this runner's parts and counters (built per run, so parts
        swapped between runs take effect)."""
        return Stepper(self.grounder, self.step_judge, self.ask_judge, self.terminal_judge, self.user, self.rewards,
                       max_steps=self.cfg.max_steps, record_frames=self.cfg.record_frames,
                       phash=self._screen_phash if self.cfg.phash else None, timings=self.timings,
                       hindsight=self.cfg.hindsight)

    def _read_screens(self, screens: list[Observation]) -> None:
        """Read the images the perceptual hashes of this round will need (screens not hashed
        yet whose image is taken when read: a browser page's ``on_read`` screenshot waits for
        a frame) side by side, as device time; a read that fails fails again in its step."""
        need = [o for o in screens if o._image is None and o._png is None and o.render is not None
                and self._phash.get((o.platform or "", ui_hash(o))) is None]
        if not need:
            return
        t0 = time.perf_counter()
        if len(need) == 1:
            _quietly_read(need[0])
        else:
            if self._shots is None:
                self._shots = cf.ThreadPoolExecutor(8, thread_name_prefix="navrl-screens")
            list(self._shots.map(_quietly_read, need))
        self.timings["device"] += time.perf_counter() - t0

    def _screen_phash(self, obs: Observation, shash: str) -> int:
        """The screen's perceptual hash, once per distinct screen (sibling rollouts revisit the
        same screens; rendering and hashing one costs ~2 ms)."""
        key = (obs.platform or "", shash)
        h = self._phash.get(key)
        if h is None:
            h = self._phash.put(key, phash64(obs.screenshot))
        return h

    def _invalidate(self, ep: Episode, reason: str) -> None:
        tr = ep.traj
        tr.valid, tr.invalid_reason, tr.end = False, reason, EndReason.INVALID.value
        tr.terminal_reward, tr.success = 0.0, False
        for s in tr.steps:
            s.reward = 0.0
        ep.done = True


_LEASE = object()
"""Marks a lease in flight (where a step's generator would be)."""


class _Flight:
    """The device calls of one run that have not answered yet: future -> (episode, its step
    generator, None for the first look, or _LEASE). Futures report to a queue as they finish."""

    def __init__(self, runner: EpisodeRunner, on_step: Callable[[int], None] | None, want_snapshot: bool,
                 refill: Callable[[Task, Any], Any] | None = None,
                 choose: Callable[[Any, list[Task]], int] | None = None,
                 release: Callable[[list[Any]], None] | None = None):
        self.runner, self.on_step, self.want_snapshot = runner, on_step, want_snapshot
        self.release = release
        self.waiting: dict[cf.Future, tuple[Episode, Any, int]] = {}   # ... and the order it started in
        self.busy: set[int] = set()         # id() of the episodes waiting
        self.done: queue.SimpleQueue[cf.Future] = queue.SimpleQueue()
        self.devices: list[Any] = []
        self.index: dict[int, int] = {}
        self._n = 0
        self.refill, self.choose = refill, choose
        self.queued: set[int] = set()       # id() of the episodes waiting for a device (rolling queue)
        self._queue: list[Episode] = []     # ... in the order they were queued
        self._running: list[Episode] = []   # episodes holding a device of the rolling queue

    def __bool__(self) -> bool:
        return bool(self.waiting)

    def _wait(self, fut: cf.Future, ep: Episode, what: Any) -> None:
        self._n += 1
        self.waiting[fut] = (ep, what, self._n)
        self.busy.add(id(ep))
        fut.add_done_callback(self.done.put)

    def lease(self, eps: list[Episode], devices: list[Any]) -> None:
        """Take the episodes' devices (``devices[i]`` is replaced once its lease lands) and
        give each its first look; the leases still running land later."""
        self.devices, self.index = devices, {id(ep): i for i, ep in enumerate(eps)}
        ready = []
        for ep, dev in zip(eps, devices):
            if dev is None and self.refill is not None:
                self._queue.append(ep)
                self.queued.add(id(ep))
                continue
            self._running.append(ep)
            if isinstance(dev, cf.Future):
                self._wait(dev, ep, _LEASE)
            else:
                ready.append(ep)
        self.start(ready, [None] * len(ready), [None] * len(ready))

    def hand_on(self, eps: list[Episode]) -> None:
        """Rolling queue: each finished episode gives its device back to the farm and the
        next queued episode leases one (usually that same device)."""
        still = []
        for ep in self._running:
            if not (ep.done and id(ep) not in self.busy) or not self._queue:
                still.append(ep)
                continue
            i = self.index[id(ep)]
            used, self.devices[i] = self.devices[i], None
            # the farm may say which waiting task suits the freed device (one whose page it
            # shows already resets in place); else first come, first served
            k = self.choose(used, [q.task for q in self._queue]) if self.choose is not None else 0
            if k is None:       # the farm would rather the device went idle (its queued tasks have homes)
                self.devices[i] = None
                if self.release is not None:
                    self.release([used])
                continue
            self._take(k, used, still)
        self._running = still

    def restart(self) -> None:
        """Lease a device for the first queued episode: no call is in flight, so no device
        would be handed on to it (a farm's ``choose`` let the freed ones go idle)."""
        self._take(0, None, self._running)

    def _take(self, k: int, used: Any, running: list[Episode]) -> None:
        """Start the ``k``-th queued episode on ``used`` (handed on) or a newly leased device
        (``used`` None), counted in ``running`` before its first call starts."""
        nxt = self._queue.pop(k)
        self.queued.discard(id(nxt))
        running.append(nxt)
        j = self.index[id(nxt)]
        tm = self.runner.timings
        t0 = time.perf_counter()
        dev = self.devices[j] = self.refill(nxt.task, used)  # type: ignore[misc]
        tm["device"] += time.perf_counter() - t0
        if isinstance(dev, cf.Future):
            self._wait(dev, nxt, _LEASE)
        else:
            nxt.device = dev
            self.start([nxt], [None], [None])

    def free(self, eps: list[Episode]) -> None:
        """Give the devices of finished episodes back to the farm once no queued episode is
        left to take them over: an adaptive farm holds leases still waiting for room until
        devices come back, so a device must not idle in a finished episode until the run ends."""
        if self.release is None or self._queue:
            return
        for ep in eps:
            if not ep.done or id(ep) in self.busy:
                continue
            i = self.index.get(id(ep))
            dev = self.devices[i] if i is not None else None
            if dev is not None and not isinstance(dev, cf.Future):
                self.devices[i] = None  # type: ignore[index]
                self.release([dev])

    def start(self, eps: list[Episode], gens: list[Any], actions: list[Any]) -> None:
        """Start the device calls; devices that answer at once (in-process) land now, in order."""
        tm = self.runner.timings
        t0 = time.perf_counter()
        started = start_steps([ep.device for ep in eps], actions, self.want_snapshot)
        tm["device"] += time.perf_counter() - t0
        for ep, gen, res in zip(eps, gens, started):
            if isinstance(res, cf.Future):
                self._wait(res, ep, gen)
            else:
                self.landed(ep, gen, res)

    def landed(self, ep: Episode, what: Any, res: Any) -> None:
        """A device answered: a lease gives the episode its device (then its first look), the
        first look fills its screen, a step is resumed (judged) with the result."""
        run = self.runner
        if what is _LEASE:
            ep.device = self.devices[self.index[id(ep)]] = res
            self.start([ep], [None], [None])
        elif what is None:
            if isinstance(res, DeviceError):
                run._invalidate(ep, res.reason)
            elif isinstance(res, BaseException):
                raise res
            else:
                ep.obs, ep.snap = res
                ep.record_task()
        else:
            run._guard(ep, lambda: resume(what, res))
            if self.on_step is not None:
                self.on_step(1)

    def collect(self, deadline: float | None, how: str, budget_s: float | None = None,
                wait_s: float | None = None) -> None:
        """Land the answers: ``ready`` those already there, ``first`` at least one (waiting
        for it), ``all`` every call in flight (in the order they started); never past
        ``deadline``. ``budget_s`` (ready, first) stops landing once that much learner time
        went into it, so the next actions start while the other answers wait their turn. With
        ``first``, answers that come within ``wait_s`` of the first one are waited for (within
        the budget)."""
        tm = self.runner.timings
        t0 = time.perf_counter()
        got: list[cf.Future] = []
        try:
            if how != "ready":
                got.append(self.done.get(timeout=_left(deadline)))
            while how == "all" and len(got) < len(self.waiting):
                got.append(self.done.get(timeout=_left(deadline)))
        except queue.Empty:     # the deadline came
            pass
        tm["device"] += time.perf_counter() - t0
        if how == "all":
            got.sort(key=lambda f: self.waiting[f][2])
            for f in got:
                self._land(f)
            return
        arrived = time.perf_counter()
        end = arrived + (budget_s if budget_s is not None else float("inf"))
        for f in got:
            self._land(f)
        # "first": answers that come within ``wait_s`` of the first are waited for and landed
        # too, so the planner gets the episodes that are ready then in one batch instead of one
        # alone followed by others a few milliseconds later; "ready" takes only those already there
        until = min(end, arrived + (wait_s or 0.0)) if how == "first" else -1.0
        while self.waiting and time.perf_counter() < end:
            left = until - time.perf_counter()
            try:
                f = self.done.get(timeout=left) if left > 0 else self.done.get_nowait()
            except queue.Empty:
                return
            self._land(f)

    def _land(self, f: cf.Future) -> None:
        ep, what, _ = self.waiting.pop(f)
        self.busy.discard(id(ep))
        self.landed(ep, what, lease_outcome(f) if what is _LEASE else step_outcome(f))

    def abandon(self) -> None:
        """Cancel every call still in flight (and lease: the farm takes the device back) and
        close the steps waiting on them."""
        for f, (_, what, _) in self.waiting.items():
            f.cancel()
            if what is not None and what is not _LEASE:
                what.close()
        self.waiting.clear()
        self.busy.clear()


def _quietly_read(obs: Observation) -> None:
    try:
        obs.screenshot
    except Exception:  # noqa: BLE001 - read again (and judged) in the step
        pass


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _gc_pace(gen0: int | None) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Raise the youngest generation's GC threshold to ``gen0`` for a run (RunnerConfig.gc_gen0);
    returns (old thresholds, the ones set) for :func:`_gc_restore`, None when nothing changed."""
    old = gc.get_threshold()
    if gen0 is None or old[0] == 0 or old[0] >= gen0:   # 0: automatic collection is off
        return None
    new = (gen0, *old[1:])
    gc.set_threshold(*new)
    return old, new


def _gc_restore(prev: tuple[tuple[int, ...], tuple[int, ...]] | None) -> None:
    """Put back the thresholds :func:`_gc_pace` replaced, unless someone changed them since."""
    if prev is not None and gc.get_threshold() == prev[1]:
        gc.set_threshold(*prev[0])


@contextlib.contextmanager
def gc_paced(gen0: int | None) -> Generator[None, None, None]:
    """The youngest generation's GC threshold raised to ``gen0`` inside the block, as a run
    does (:func:`_gc_pace`): what allocates many small objects (featurising, scoring) meets
    fewer collections, each walking every long-lived object of the memos."""
    prev = _gc_pace(gen0)
    try:
        yield
    finally:
        _gc_restore(prev)
