"""One-step off-policy training: the next update's rollouts are collected while a learner
process learns from the last ones (``run.overlap``; the shape of verl's one-step-off-policy
recipe, on one machine).

A sequential update costs rollout + update; on two cores with the learning in its own process
it costs about the larger of the two, since the two halves share no Python interpreter (a
thread would: the GIL serialises them, measured in docs/results/speed.md). The price is one
update of lag: the batch the learner receives at update k+1 was sampled by the planner of
update k-1 (the first batch has no lag). The learner takes PPO's ratio against the planner it
holds when the update starts — each sample's log-probs are recomputed then
(:func:`refresh_proximal`) — and, with ``policy.off_policy_ratio`` ``decoupled``, weights each
token by min(cap, pi_prox / mu) against what sampled it: Hilton et al.'s decoupled PPO, which is
what it was written for.

The learner is a fork of the trainer taken when :meth:`~navrl.rl.trainer.Trainer.fit` starts,
so it holds the same planner, critic, optimisers, demonstrations and RNG. After each update it
sends back the record to log and the state the collecting side needs (:meth:`Trainer.learner_state`:
weights, optimiser states for checkpoints, counters, the pool replay's priorities); the
collecting side logs, runs the callbacks and checkpoints, so a run's files are written by one
process. The child never touches the devices, and leaves with ``os._exit`` (no finaliser of a
copied device runs there). Both processes use one torch thread (an OpenMP pool does not
survive a fork).

Measured (docs/results/speed.md, docs/results/exploration.md §19): 1.5x faster per update on two
cores; on the 30-update reduction the lag cost learning (last 3 steps 28/48 against 38/48,
one seed), so it is off by default.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import traceback
import warnings
from typing import TYPE_CHECKING

import torch

from navrl.errors import Outage
from navrl.rl.batch import Sample, length_chunks
from navrl.rl.config import ConfigError

if TYPE_CHECKING:
    from navrl.rl.trainer import Trainer, UpdateStats


class LearnerError(RuntimeError):
    """The learner process failed in a way that cannot be raised again as it was (its
    exception could not be sent back, or the process died)."""


class LearnerProcess:
    """The learning half of ``trainer`` in a forked child process: :meth:`submit` a batch of
    trajectories, :meth:`result` waits for the update it made and applies its state to
    ``trainer`` (the collecting side)."""

    def __init__(self, trainer: "Trainer"):
        if any(p.device.type != "cpu" for p in trainer.policy.policy_parameters()):
            raise ConfigError("run.overlap forks the trainer into a learner process: the planner must be on the CPU "
                              "(a CUDA context does not survive a fork); run without run.overlap")
        self.trainer = trainer
        ctx = mp.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._threads = torch.get_num_threads()      # put back by close()
        torch.set_num_threads(1)
        with warnings.catch_warnings():     # (fork with threads alive: the child uses none of them)
            warnings.simplefilter("ignore", DeprecationWarning)
            self.proc = ctx.Process(target=_serve, args=(trainer, child), daemon=True, name="navrl-learner")
            self.proc.start()
        child.close()
        self.busy = False

    def submit(self, trajs: list, tm: dict, collected_at: int, collection: dict | None = None) -> None:
        """Learn from ``trajs`` (sampled by the planner of update ``collected_at``; ``collection``:
        what the collection logs, :meth:`Trainer.collection_record`)."""
        if self.busy:
            raise RuntimeError("the learner is busy: take its result first")
        self._conn.send(("learn", trajs, tm, collected_at, collection))
        self.busy = True

    def result(self) -> "UpdateStats":
        """The submitted update's stats, once the learner has made it; its state is applied to
        the trainer. An exception the learner raised is raised here."""
        try:
            msg = self._conn.recv()
        except (EOFError, OSError):
            self.busy = False
            raise LearnerError(f"the learner process ended (exit code {self.proc.exitcode})") from None
        self.busy = False
        kind, records, *rest = msg
        if self.trainer.logger:                 # what the learner logged (an outage's record too)
            for rec in records:
                self.trainer.logger.log(rec)
        if kind == "error":
            exc, tb, state = rest
            if state is not None:
                self.trainer.apply_learner_state(state)
            if isinstance(exc, BaseException):
                raise exc
            raise LearnerError(f"the learner failed: {exc}\n{tb}")
        stats, state = rest
        self.trainer.apply_learner_state(state)
        return stats

    def close(self) -> None:
        """Stop the child (it finishes nothing: a batch in flight is dropped); this process's
        torch thread count is put back."""
        try:
            self._conn.send(("stop",))
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=5)
        self._conn.close()
        torch.set_num_threads(self._threads)


@torch.no_grad()
def refresh_proximal(policy, samples: list[Sample], temperature: float, chunk: int) -> None:
    """Set each sample's ``policy_logprobs`` to the log-probs ``policy`` gives its output now (at
    ``temperature``, the rollouts'): the proximal policy PPO's ratio is taken against when the
    batch was sampled by an older planner (``policy.off_policy_ratio`` ``proximal`` or
    ``decoupled``; ``old_logprobs`` stay the behaviour's). Each distinct (prompt, output) is
    scored once, in chunks of ``chunk`` of similar length."""
    same: dict[tuple[str, tuple[int, ...]], list[Sample]] = {}
    for s in samples:
        same.setdefault((s.prompt, tuple(s.output_ids)), []).append(s)
    firsts = [v[0] for v in same.values()]
    for part in length_chunks(firsts, chunk):
        lp = policy.score([s.prompt for s in part], [s.output_ids for s in part], temperature=temperature).logprobs
        for row, s in zip(lp, part):
            own = row[:len(s.old_logprobs)].tolist()
            for t in same[(s.prompt, tuple(s.output_ids))]:
                t.policy_logprobs = own


class _Records:
    """The learner's logger: keeps the records of the update under way, to send them back."""

    def __init__(self):
        self.records: list[dict] = []

    def log(self, record: dict) -> None:
        self.records.append(record)


def _serve(trainer: "Trainer", conn) -> None:
    """The child's loop: learn from each batch received, send back (stats, state)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the collecting side's to handle
    code = 0
    try:
        torch.set_num_threads(1)
        log = trainer.logger = _Records()          # the collecting side writes the run's files
        while True:
            msg = conn.recv()
            if msg[0] != "learn":
                break
            _, trajs, tm, collected_at, collection = msg
            log.records = []
            try:
                stats = trainer.learn(trajs, tm, collected_at=collected_at, collection=collection)
                conn.send(("ok", log.records, stats, trainer.learner_state()))
            except BaseException as e:   # noqa: BLE001 — sent back and raised there
                tb = traceback.format_exc()
                # an outage ends a completed update (counted, logged): its state goes back with it
                state = trainer.learner_state() if isinstance(e, Outage) else None
                try:
                    conn.send(("error", log.records, e, tb, state))
                except Exception:        # an exception that does not pickle
                    conn.send(("error", log.records, f"{type(e).__name__}: {e}", tb, state))
    except (EOFError, OSError):
        code = 1
    finally:
        os._exit(code)
