"""The outer training loop's callbacks: :meth:`navrl.rl.trainer.Trainer.fit` runs the updates,
callbacks do everything around them — checkpoints, evaluations, progress and stopping rules
(the shape of Stable-Baselines3's ``learn(total_timesteps, callback)``).

A callback overrides any of four hooks, called in the order the callbacks are given:

- ``on_fit_start(trainer, target)`` once, before the first update (``trainer.update`` is
  where a resumed run stands, ``target`` the update count ``fit`` runs to);
- ``on_update_start(trainer)`` before each update;
- ``on_update_end(trainer, stats)`` after each completed update; a returned reason (a
  non-empty string) stops the run after this update (every callback still sees it);
- ``on_fit_end(trainer, result)`` once at the end, also when the run ends in an error
  (``result.error``: a ``KeyboardInterrupt``, an :class:`~navrl.errors.Outage` of too many
  fully masked updates, ...), which ``fit`` raises again afterwards.

This layer imports nothing above :mod:`navrl.rl`: the evaluation a :class:`EvalCallback`
runs and the display a :class:`ProgressCallback` drives are passed in (``navrl.eval``'s
``evaluate_trainer``, ``navrl.cli.progress.bar``).
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from navrl.errors import Outage

if TYPE_CHECKING:
    from navrl.rl.trainer import Trainer, UpdateStats


@dataclass
class FitResult:
    """What one :meth:`~navrl.rl.trainer.Trainer.fit` call did."""
    start: int
    """``trainer.update`` when the call began (a resumed run's checkpoint)."""
    target: int
    """The update count it ran to."""
    update: int = 0
    """``trainer.update`` when it ended."""
    stopped: str | None = None
    """The reason a stopping rule gave (the run ended before ``target``), else None."""
    error: BaseException | None = None
    """What ended the call abnormally (raised again after ``on_fit_end``), else None."""
    history: list = field(default_factory=list)
    """The :class:`~navrl.rl.trainer.UpdateStats` of each update this call completed."""

    @property
    def updates(self) -> int:
        """Updates this call completed."""
        return self.update - self.start


class Callback:
    """Base class: every hook does nothing (override the ones you need)."""

    def on_fit_start(self, trainer: Trainer, target: int) -> None:
        pass

    def on_update_start(self, trainer: Trainer) -> None:
        pass

    def on_update_end(self, trainer: Trainer, stats: UpdateStats) -> str | None:
        return None

    def on_fit_end(self, trainer: Trainer, result: FitResult) -> None:
        pass


class CheckpointCallback(Callback):
    """Checkpoints of the run (``checkpoints/update_NNNNN.pt`` and ``last.txt``, the files
    :meth:`~navrl.rl.trainer.Trainer.resume` continues from):

    - after every ``every``-th update (``trainer.update % every == 0``; 0: none on the way);
    - at the end of a run that ended without an error (``final``), stopped early or not;
    - with ``on_error``: on Ctrl-C (``KeyboardInterrupt``) the state of the last *completed*
      update — a snapshot is taken before each update, so an interrupt in the middle of one
      never saves a half-updated state and a resumed run reproduces the uninterrupted one —
      and ``report`` is called with where it went; on an :class:`~navrl.errors.Outage` (too
      many fully masked updates) the state of the update that completed last.
      Any other error saves nothing.

    ``keep``: how many ``update_*.pt`` files to keep (the newest; None keeps all)."""

    def __init__(self, every: int = 0, *, final: bool = True, on_error: bool = False, keep: int | None = None,
                 report: Callable[[str], None] | None = None):
        if every < 0 or (keep is not None and keep < 1):
            raise ValueError("CheckpointCallback: every must be >= 0 and keep >= 1 (or None)")
        self.every, self.final, self.on_error, self.keep, self.report = every, final, on_error, keep, report
        self._snapshot: tuple[int, bytes] | None = None
        self.saved: list[Path] = []
        """Every checkpoint this callback wrote, in order."""

    def on_update_start(self, trainer: Trainer) -> None:
        if self.on_error:
            self._snapshot = trainer.checkpoint_bytes()

    def on_update_end(self, trainer: Trainer, stats: UpdateStats) -> None:
        self._snapshot = None
        if self.every and trainer.update % self.every == 0:
            self._save(trainer)

    def on_fit_end(self, trainer: Trainer, result: FitResult) -> None:
        err, snap, self._snapshot = result.error, self._snapshot, None
        if err is None:
            if self.final:
                self._save(trainer)
        elif self.on_error and isinstance(err, KeyboardInterrupt):
            # mid-update the live state is half-updated: save the snapshot of the last completed one
            snap = snap if snap is not None and snap[0] == trainer.update else None
            path = self._save(trainer, snap)
            if self.report:
                self.report(f"interrupted: checkpoint of update {snap[0] if snap else trainer.update} saved to {path}")
        elif self.on_error and isinstance(err, Outage):
            self._save(trainer)

    def _save(self, trainer: Trainer, snapshot: tuple[int, bytes] | None = None) -> Path:
        path = trainer.save_checkpoint(snapshot=snapshot)
        self.saved.append(path)
        if self.keep is not None:
            old = sorted(path.parent.glob("update_*.pt"))
            for p in old[:-self.keep] if len(old) > self.keep else []:
                if p != path:
                    p.unlink(missing_ok=True)
        return path


class EvalCallback(Callback):
    """Evaluate the policy with ``evaluate(trainer)`` after every ``every``-th update (0: not
    periodically) and after the updates listed in ``at``; with ``at_target=False`` never after
    the update ``fit`` runs to (a caller that evaluates after ``fit`` anyway). Each result goes
    to ``on_result(update, result)`` and is kept in :attr:`results`."""

    def __init__(self, evaluate: Callable[[Trainer], Any], every: int = 0, at: Iterable[int] = (), *,
                 at_target: bool = True, on_result: Callable[[int, Any], None] | None = None):
        if every < 0:
            raise ValueError("EvalCallback: every must be >= 0")
        self.evaluate, self.every, self.at = evaluate, every, frozenset(at)
        self.at_target, self.on_result = at_target, on_result
        self.target = 0
        self.results: list[tuple[int, Any]] = []
        """(update, result) of every evaluation."""

    def on_fit_start(self, trainer: Trainer, target: int) -> None:
        self.target = target

    def on_update_end(self, trainer: Trainer, stats: UpdateStats) -> None:
        u = trainer.update
        if not ((self.every and u % self.every == 0) or u in self.at):
            return
        if not self.at_target and u >= self.target:
            return
        res = self.evaluate(trainer)
        self.results.append((u, res))
        if self.on_result:
            self.on_result(u, res)


Advance = Callable[[int, "str | None"], None]
"""``advance(k, info)``: ``k`` more updates are done; ``info`` (when not None) is the line to show."""


class ProgressCallback(Callback):
    """Report each update with ``text(metrics)`` (the update's metrics record).

    With ``display``: ``display(target)`` opens a display for the run (a context manager that
    yields an :data:`Advance`, the shape of ``navrl.cli.progress.bar``), which is advanced by the
    updates a resumed run already has (info None), then by 1 per update with the text; it is
    closed when ``fit`` ends, an error included. Without: ``log(text)`` after each update."""

    def __init__(self, text: Callable[[dict], str], display: Callable[[int], AbstractContextManager[Advance]]
                 | None = None, log: Callable[[str], None] = print):
        self.text, self.display, self.log = text, display, log
        self._cm: AbstractContextManager[Advance] | None = None
        self._advance: Advance | None = None

    def on_fit_start(self, trainer: Trainer, target: int) -> None:
        if self.display is not None:
            self._cm = self.display(target)
            self._advance = self._cm.__enter__()
            self._advance(trainer.update, None)

    def on_update_end(self, trainer: Trainer, stats: UpdateStats) -> None:
        line = self.text(stats.metrics)
        if self._advance is not None:
            self._advance(1, line)
        else:
            self.log(line)

    def on_fit_end(self, trainer: Trainer, result: FitResult) -> None:
        cm, self._cm, self._advance = self._cm, None, None
        if cm is not None:
            e = result.error
            cm.__exit__(type(e) if e is not None else None, e, e.__traceback__ if e is not None else None)


class StopOnSuccess(Callback):
    """A stopping rule: stop once the training success rate, averaged over the last ``window``
    updates that measured one (fully masked updates measure nothing and are skipped), reaches
    ``target`` (the ``reward_threshold`` rule of Stable-Baselines3, on the rollouts' success)."""

    def __init__(self, target: float, window: int = 1):
        if not 0.0 <= target <= 1.0 or window < 1:
            raise ValueError("StopOnSuccess: target must lie in [0, 1] and window be >= 1")
        self.target, self.window = target, window
        self._recent: list[float] = []

    def on_fit_start(self, trainer: Trainer, target: int) -> None:
        self._recent = []

    def on_update_end(self, trainer: Trainer, stats: UpdateStats) -> str | None:
        s = stats.metrics.get("success")
        if s is None:
            return None
        self._recent = (self._recent + [float(s)])[-self.window:]
        mean = sum(self._recent) / len(self._recent)
        if len(self._recent) == self.window and mean >= self.target:
            return (f"training success {100 * mean:.1f}% over the last {self.window} measured updates "
                    f"reached the target {100 * self.target:.1f}% at update {trainer.update}")
        return None


__all__ = ["Advance", "Callback", "CheckpointCallback", "EvalCallback", "FitResult", "ProgressCallback",
           "StopOnSuccess"]
