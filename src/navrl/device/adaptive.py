"""How many devices a pool runs at once when the machine is busy: an adaptive limit.

A farm of browser pages shares the machine's cores with the learner and with whatever
else runs there. Past a point, every page added slows every other page down; then restores
and steps miss their deadlines and their episodes are masked (infrastructure, never the
agent's fault, but nothing is learned from them). :class:`AdaptiveLimit` keeps the number
of devices *in flight* (restoring or leased to an episode) where the devices still meet
their deadlines, the way TCP keeps a congestion window (additive increase, multiplicative
decrease):

- a **miss** (a call that overran its deadline, or a restore slower than
  :attr:`AdaptiveConfig.slow_restore_s`) multiplies the limit by
  :attr:`AdaptiveConfig.decrease` (at least :attr:`AdaptiveConfig.min_in_flight`). Misses of
  calls that started before the last drop do not drop it again: one burst of contention,
  in which every device in flight misses together, halves the limit once, not down to 1;
- :attr:`AdaptiveConfig.recover_after` restores in a row within
  ``slow_restore_s / 2`` (and no miss) raise it by one, up to the pool's size.

The pool (:class:`navrl.device.pool.DevicePool`, ``PoolConfig(adaptive=...)``) asks the
limit before every lease: a lease waits (it is not failed) until fewer devices than the
limit are in flight, and a device given back while more devices exist than the limit is
closed, its renderer process with it. This module holds the rule only (no devices, no
threads of its own), so it is tested with a fake clock and fake restores.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

from navrl.device.backend import DeviceTimeout

__all__ = ["AdaptiveConfig", "AdaptiveLimit", "missed_deadline"]


@dataclass(frozen=True)
class AdaptiveConfig:
    """Settings of an :class:`AdaptiveLimit` (``PoolConfig(adaptive=AdaptiveConfig())``)."""

    start: int | None = None
    """Devices in flight at the start; None: the pool's ``size`` (the farm sized to the machine)."""
    min_in_flight: int = 1
    """The limit never drops below this."""
    slow_restore_s: float = 10.0
    """A restore (with its health probe) that succeeds but takes longer than this counts as a
    miss too: the sign of contention before deadlines are missed. Restores within half of it
    count towards recovery."""
    decrease: float = 0.5
    """Factor applied to the limit on a miss (0 < decrease < 1)."""
    recover_after: int = 8
    """Fast restores in a row (no miss between) that raise the limit by one."""

    def validate(self) -> "AdaptiveConfig":
        if self.start is not None and self.start < 1:
            raise ValueError(f"adaptive start must be positive or None, got {self.start}")
        if self.min_in_flight < 1:
            raise ValueError(f"min_in_flight must be positive, got {self.min_in_flight}")
        if not 0 < self.decrease < 1:
            raise ValueError(f"decrease must lie in (0, 1), got {self.decrease}")
        if self.slow_restore_s <= 0 or self.recover_after < 1:
            raise ValueError("slow_restore_s and recover_after must be positive")
        return self


def missed_deadline(e: BaseException) -> bool:
    """Whether a device error says a call overran its deadline (the pool's per-call timeout,
    or a device's own, e.g. a browser page that did not answer in time), as opposed to a
    verdict such as an HTTP error or a crash."""
    return isinstance(e, DeviceTimeout) or bool(getattr(e, "deadline_missed", False))


class AdaptiveLimit:
    """The number of devices allowed in flight, lowered on misses and raised on recovery.

    Thread-safe. ``maximum``: the pool's size; ``clock``: ``time.monotonic`` (tests pass a
    fake). Callers take a :meth:`token` when a call starts and report its outcome with it
    (:meth:`miss`, :meth:`restored`); ``history`` holds ``(time, limit, why)`` of every change.
    """

    def __init__(self, config: AdaptiveConfig, maximum: int, clock: Callable[[], float] = time.monotonic):
        self.cfg = config.validate()
        if maximum < 1:
            raise ValueError(f"maximum must be positive, got {maximum}")
        self.maximum = maximum
        self.floor = min(config.min_in_flight, maximum)
        self.limit = max(self.floor, min(maximum, config.start if config.start is not None else maximum))
        self.lowest = self.limit
        self.epoch = 0          # raised by every drop: misses of calls started before it are old news
        self.streak = 0
        self.misses = 0
        self.drops = 0
        self.raises = 0
        self._clock = clock
        self._lock = threading.Lock()
        self.history: list[tuple[float, int, str]] = [(clock(), self.limit, "start")]

    def token(self) -> int:
        """Taken when a call starts: the epoch its outcome is judged against."""
        return self.epoch

    def miss(self, token: int, why: str = "deadline") -> bool:
        """A call started at ``token`` missed (its deadline, or a restore was slow). Drops the
        limit unless it was already dropped since that call started; True when it dropped."""
        with self._lock:
            self.misses += 1
            self.streak = 0
            if token != self.epoch:
                return False
            new = max(self.floor, math.floor(self.limit * self.cfg.decrease))
            if new == self.limit:
                return False
            self.epoch += 1
            self.limit = new
            self.lowest = min(self.lowest, new)
            self.drops += 1
            self.history.append((self._clock(), new, why))
            return True

    def dropped_since(self, token: int) -> bool:
        """Whether the limit dropped after a call started at ``token`` (it ran on a machine
        more crowded than the pool now allows)."""
        return token != self.epoch

    def restored(self, token: int, seconds: float) -> None:
        """A restore started at ``token`` succeeded in ``seconds``: slow ones are misses, fast
        ones count towards raising the limit."""
        if seconds > self.cfg.slow_restore_s:
            self.miss(token, f"slow restore {seconds:.1f} s")
            return
        if seconds > self.cfg.slow_restore_s / 2:
            return                                   # neither congested nor clearly healthy
        with self._lock:
            self.streak += 1
            if self.streak < self.cfg.recover_after or self.limit >= self.maximum:
                return
            self.streak = 0
            self.limit += 1
            self.raises += 1
            self.history.append((self._clock(), self.limit, "recovered"))

    def stats(self) -> dict:
        with self._lock:
            return {"limit": self.limit, "maximum": self.maximum, "lowest": self.lowest, "misses": self.misses,
                    "drops": self.drops, "raises": self.raises}
