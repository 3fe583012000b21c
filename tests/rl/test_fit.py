"""``Trainer.fit(updates, callbacks)``: the one outer loop, and each callback (checkpoints,
evaluation, progress, stopping rules) at the updates it should act on.

Most tests replace ``train_step`` with a scripted one (the update number goes up, the
metrics say a given success), so the numbers are checkable by hand; the last runs the real
update and shows ``fit`` leaves the run exactly as a bare ``train_step`` loop does."""
from __future__ import annotations

import copy
import json
from contextlib import contextmanager

import pytest
import torch

from navrl.errors import Outage
from navrl.experiments.pipeline import build_tiny_policy, load_policy
from navrl.rl.callbacks import (Callback, CheckpointCallback, EvalCallback, FitResult, ProgressCallback,
                                StopOnSuccess)
from navrl.rl.trainer import Trainer, UpdateStats

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def policy(quick):
    return build_tiny_policy(quick)


def _trainer(quick, policy, run, successes=(), fail_at: dict | None = None, **cfg) -> Trainer:
    """A trainer whose ``train_step`` completes update n with training success
    ``successes[n - 1]`` (0.5 past the list) and raises ``fail_at[n]`` instead of completing
    update n (an Outage after counting it, as the real update does; anything else before)."""
    tr = Trainer(copy.deepcopy(policy), quick.train.override({f"run.{k}": v for k, v in cfg.items()}), run)
    tr.steps = 0

    def step(progress=None):
        n = tr.update + 1
        tr.steps += 1
        err = (fail_at or {}).get(n)
        if err is not None and not isinstance(err, Outage):
            raise err
        tr.update = n
        if err is not None:
            raise err
        s = successes[n - 1] if n <= len(successes) else 0.5
        rec = {"kind": "update", "update": n, "success": s, "mean_return": s, "episode_length": 3.0,
               "samples": 10 * n}
        tr.logger.log(rec)
        return UpdateStats(n, rec)
    tr.train_step = step
    return tr


class Recorder(Callback):
    def __init__(self, name: str, events: list, stop_at: int | None = None):
        self.name, self.events, self.stop_at = name, events, stop_at

    def on_fit_start(self, trainer, target):
        self.events.append((self.name, "fit_start", trainer.update, target))

    def on_update_start(self, trainer):
        self.events.append((self.name, "update_start", trainer.update))

    def on_update_end(self, trainer, stats):
        self.events.append((self.name, "update_end", stats.update))
        return f"{self.name} stops" if stats.update == self.stop_at else None

    def on_fit_end(self, trainer, result):
        self.events.append((self.name, "fit_end", result.update, result.stopped,
                            type(result.error).__name__ if result.error else None))


def _ckpts(run) -> list[str]:
    return sorted(p.name for p in (run / "checkpoints").glob("*.pt")) if (run / "checkpoints").exists() else []


# ------------------------------------------------------------------ the loop
def test_fit_runs_to_the_target_calling_each_hook_in_order(quick, policy, tmp_path) -> None:
    tr = _trainer(quick, policy, tmp_path)
    ev: list = []
    res = tr.fit(2, [Recorder("a", ev), Recorder("b", ev)])
    assert ev == [("a", "fit_start", 0, 2), ("b", "fit_start", 0, 2),
                  ("a", "update_start", 0), ("b", "update_start", 0), ("a", "update_end", 1), ("b", "update_end", 1),
                  ("a", "update_start", 1), ("b", "update_start", 1), ("a", "update_end", 2), ("b", "update_end", 2),
                  ("a", "fit_end", 2, None, None), ("b", "fit_end", 2, None, None)]
    assert isinstance(res, FitResult)
    assert (res.start, res.target, res.update, res.updates, res.stopped, res.error) == (0, 2, 2, 2, None, None)
    assert [s.update for s in res.history] == [1, 2] and tr.steps == 2


def test_the_target_is_the_runs_total_so_a_resumed_run_runs_the_rest(quick, policy, tmp_path) -> None:
    tr = _trainer(quick, policy, tmp_path, num_updates=5)
    tr.update = 2                                      # as Trainer.resume leaves it
    res = tr.fit()                                     # default: cfg.run.num_updates
    assert (res.start, res.target, res.updates, tr.steps, tr.update) == (2, 5, 3, 3, 5)
    ev: list = []
    res = tr.fit(4, [Recorder("a", ev)])               # already past the target: no update
    assert tr.steps == 3 and res.updates == 0 and ev == [("a", "fit_start", 5, 4), ("a", "fit_end", 5, None, None)]


def test_a_stop_reason_ends_the_run_after_every_callback_saw_the_update(quick, policy, tmp_path) -> None:
    tr = _trainer(quick, policy, tmp_path)
    ev: list = []
    res = tr.fit(10, [Recorder("a", ev, stop_at=3), Recorder("b", ev)])
    assert tr.steps == 3 and res.update == 3 and res.stopped == "a stops"
    assert ev[-4:] == [("a", "update_end", 3), ("b", "update_end", 3),
                       ("a", "fit_end", 3, "a stops", None), ("b", "fit_end", 3, "a stops", None)]


def test_an_error_reaches_every_started_callback_and_is_raised_again(quick, policy, tmp_path) -> None:
    tr = _trainer(quick, policy, tmp_path, fail_at={2: RuntimeError("boom")})
    ev: list = []
    with pytest.raises(RuntimeError, match="boom"):
        tr.fit(4, [Recorder("a", ev)])
    assert ev[-1] == ("a", "fit_end", 1, None, "RuntimeError")

    class BadStart(Callback):
        def on_fit_start(self, trainer, target):
            raise ValueError("no display")
    ev2: list = []
    with pytest.raises(ValueError, match="no display"):
        tr.fit(4, [Recorder("a", ev2), BadStart(), Recorder("c", ev2)])
    # "c" never started, so it is not ended either; no update ran
    assert ev2 == [("a", "fit_start", 1, 4), ("a", "fit_end", 1, None, "ValueError")] and tr.update == 1


# ------------------------------------------------------------------ stopping rules
def test_stop_on_success_stops_at_the_first_window_that_reaches_the_target(quick, policy, tmp_path) -> None:
    # measured successes: u1 0.2; u2 all masked (None, skipped); u3 0.6 -> mean(0.2, 0.6) = 0.4;
    # u4 0.3 -> 0.45; u5 0.8 -> mean(0.3, 0.8) = 0.55 >= 0.5: stop after update 5
    tr = _trainer(quick, policy, tmp_path, successes=[0.2, None, 0.6, 0.3, 0.8, 0.9])
    ck = CheckpointCallback()
    res = tr.fit(10, [StopOnSuccess(0.5, window=2), ck])
    assert res.update == 5 and tr.steps == 5
    assert res.stopped == ("training success 55.0% over the last 2 measured updates reached the target 50.0% "
                           "at update 5")
    assert _ckpts(tmp_path) == ["update_00005.pt"]     # a stopped run still gets its final checkpoint
    # window 1: the first measured update at or above the target
    tr = _trainer(quick, policy, tmp_path / "b", successes=[0.2, None, 0.6])
    assert tr.fit(10, [StopOnSuccess(0.6)]).update == 3
    with pytest.raises(ValueError):
        StopOnSuccess(1.5)


def test_too_many_fully_masked_updates_stop_the_run_through_fit(quick, policy, tmp_path) -> None:
    """The masked-updates rule is the update's own (Outage from train_step): fit ends the run
    there, the checkpoint callback saves the completed update when asked to, and re-raises."""
    tr = _trainer(quick, policy, tmp_path / "a", fail_at={3: Outage("outage")})
    with pytest.raises(Outage):
        tr.fit(6, [CheckpointCallback(2, on_error=True)])
    assert tr.update == 3 and _ckpts(tmp_path / "a") == ["update_00002.pt", "update_00003.pt"]
    assert (tmp_path / "a" / "checkpoints" / "last.txt").read_text() == "update_00003.pt"
    tr = _trainer(quick, policy, tmp_path / "b", fail_at={3: Outage("outage")})
    with pytest.raises(Outage):                        # the experiments: no checkpoint on an outage
        tr.fit(6, [CheckpointCallback()])
    assert _ckpts(tmp_path / "b") == []


# ------------------------------------------------------------------ checkpoints
def test_checkpoints_every_n_updates_and_at_the_end(quick, policy, tmp_path) -> None:
    tr = _trainer(quick, policy, tmp_path / "a")
    ck = CheckpointCallback(2)
    tr.fit(5, [ck])
    assert _ckpts(tmp_path / "a") == ["update_00002.pt", "update_00004.pt", "update_00005.pt"]
    assert [p.name for p in ck.saved] == ["update_00002.pt", "update_00004.pt", "update_00005.pt"]
    assert (tmp_path / "a" / "checkpoints" / "last.txt").read_text() == "update_00005.pt"
    tr = _trainer(quick, policy, tmp_path / "b")
    tr.fit(5, [CheckpointCallback(2, keep=2)])         # the two newest stay
    assert _ckpts(tmp_path / "b") == ["update_00004.pt", "update_00005.pt"]
    tr = _trainer(quick, policy, tmp_path / "c")
    tr.fit(4, [CheckpointCallback(2, final=False)])
    assert _ckpts(tmp_path / "c") == ["update_00002.pt", "update_00004.pt"]
    tr = _trainer(quick, policy, tmp_path / "d", fail_at={3: RuntimeError("bug")})
    with pytest.raises(RuntimeError):                  # any other error saves nothing more
        tr.fit(5, [CheckpointCallback(1, on_error=True)])
    assert _ckpts(tmp_path / "d") == ["update_00001.pt", "update_00002.pt"]


def test_ctrl_c_in_the_middle_of_an_update_saves_the_completed_one(quick, policy, tmp_path) -> None:
    run = tmp_path / "run"
    tr = _trainer(quick, policy, run)
    real = tr.train_step
    first = next(iter(tr.policy.policy_parameters()))
    before = {}

    def step(progress=None):
        if tr.update == 2:                             # update 3 changes weights, then Ctrl-C
            before["w"] = first.detach().clone()
            with torch.no_grad():
                first.add_(1.0)
            raise KeyboardInterrupt
        return real(progress)
    tr.train_step = step
    msgs: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        tr.fit(5, [CheckpointCallback(0, on_error=True, report=msgs.append)])
    path = run / "checkpoints" / "update_00002.pt"
    assert msgs == [f"interrupted: checkpoint of update 2 saved to {path}"]
    assert _ckpts(run) == ["update_00002.pt"]
    saved = next(iter(load_policy(run).policy_parameters()))
    assert torch.equal(saved, before["w"]) and not torch.equal(saved, first.detach())   # not half-updated

    # Ctrl-C between updates (here: in another callback after update 1): the live state, complete
    run = tmp_path / "run2"
    tr = _trainer(quick, policy, run)

    class CtrlC(Callback):
        def on_update_end(self, trainer, stats):
            raise KeyboardInterrupt
    msgs = []
    with pytest.raises(KeyboardInterrupt):
        tr.fit(5, [CheckpointCallback(0, on_error=True, report=msgs.append), CtrlC()])
    assert msgs == [f"interrupted: checkpoint of update 1 saved to {run / 'checkpoints' / 'update_00001.pt'}"]


# ------------------------------------------------------------------ evaluation
def test_evaluation_every_n_and_at_listed_updates(quick, policy, tmp_path) -> None:
    tr = _trainer(quick, policy, tmp_path)
    seen: list = []
    ev = EvalCallback(lambda t: 10 * t.update, every=2, at=[3], on_result=lambda u, r: seen.append((u, r)))
    tr.fit(6, [ev])
    assert ev.results == [(2, 20), (3, 30), (4, 40), (6, 60)] and seen == ev.results
    tr = _trainer(quick, policy, tmp_path / "b")
    ev = EvalCallback(lambda t: t.update, every=2, at_target=False)   # the CLI evaluates after fit itself
    tr.fit(6, [ev])
    assert [u for u, _ in ev.results] == [2, 4]
    tr = _trainer(quick, policy, tmp_path / "c")
    ev = EvalCallback(lambda t: t.update, at=[0, 1, 2])               # paper-table's eval_at (0 = SFT, not here)
    tr.fit(2, [ev])
    assert [u for u, _ in ev.results] == [1, 2]


# ------------------------------------------------------------------ progress
def test_progress_on_a_display_and_as_lines(quick, policy, tmp_path) -> None:
    calls: list = []

    @contextmanager
    def display(total):
        calls.append(("open", total))
        try:
            yield lambda k, info: calls.append((k, info))
        finally:
            calls.append(("close",))
    tr = _trainer(quick, policy, tmp_path, successes=[0.25, 0.5, 0.75], fail_at={4: RuntimeError("x")})
    tr.update = 1                                      # resumed at update 1: the bar starts there
    text = lambda m: f"u{m['update']} {m['success']}"  # noqa: E731
    with pytest.raises(RuntimeError):
        tr.fit(5, [ProgressCallback(text, display=display)])
    assert calls == [("open", 5), (1, None), (1, "u2 0.5"), (1, "u3 0.75"), ("close",)]   # closed on the error
    lines: list[str] = []
    tr = _trainer(quick, policy, tmp_path / "b", successes=[0.25, 0.5])
    tr.fit(2, [ProgressCallback(text, log=lines.append)])
    assert lines == ["u1 0.25", "u2 0.5"]


# ------------------------------------------------------------------ the real update
def test_fit_leaves_the_run_as_a_bare_train_step_loop_does(quick, policy, tmp_path) -> None:
    """Two real updates through fit, with a snapshot before each update and a checkpoint after
    each, give the same weights, RNG state and metrics rows as two bare train_step calls."""
    cfg = quick.train.override({"critic.critic_warmup_updates": 0})
    runs = {}
    for name in ("loop", "fit"):
        torch.manual_seed(0)
        tr = Trainer(copy.deepcopy(policy), cfg, tmp_path / name)
        if name == "loop":
            tr.train_step()
            tr.train_step()
        else:
            res = tr.fit(2, [CheckpointCallback(1, on_error=True), EvalCallback(lambda t: None, every=1)])
            assert [s.update for s in res.history] == [1, 2]
        rows = [json.loads(x) for x in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
        for r in rows:
            r.pop("time")
        runs[name] = ([p.detach().clone() for p in tr.policy.policy_parameters()], tr.rng.getstate(), rows)
    (pa, ra, ma), (pb, rb, mb) = runs["loop"], runs["fit"]
    assert all(torch.equal(x, y) for x, y in zip(pa, pb)) and ra == rb
    assert ma == mb and [r["update"] for r in mb] == [1, 2]
    assert _ckpts(tmp_path / "fit") == ["update_00001.pt", "update_00002.pt"]


# ------------------------------------------------------------------ the CLI's wiring
def test_navrl_trains_callbacks_checkpoint_evaluate_and_show_progress(quick, policy, tmp_path, monkeypatch) -> None:
    """``navrl train`` / ``navrl demo`` (train_with_progress): a checkpoint every
    cfg.run.checkpoint_every updates and at the end, an evaluation every N updates but the last
    (the command evaluates after training), the SIGINT handler put back afterwards."""
    import signal

    import navrl.eval
    from navrl.cli.cmd_train import train_with_progress
    evals: list = []
    monkeypatch.setattr(navrl.eval, "evaluate_trainer", lambda t: evals.append(t.update) or {"s": t.update})
    tr = _trainer(quick, policy, tmp_path, checkpoint_every=2)
    seen: list = []
    before = signal.getsignal(signal.SIGINT)
    res = train_with_progress(tr, 5, 2, on_eval=lambda u, r: seen.append((u, r)))
    assert res.update == 5 and signal.getsignal(signal.SIGINT) is before
    assert _ckpts(tmp_path) == ["update_00002.pt", "update_00004.pt", "update_00005.pt"]
    assert evals == [2, 4] and seen == [(2, {"s": 2}), (4, {"s": 4})]
