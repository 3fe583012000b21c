"""Perturbation and fault-injection settings of the phone world (docs/design.md §7b)."""
from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class PerturbConfig:
    """Things clean demonstrations never show. Each is a probability; all seeded."""

    popup: float = 0.15
    """Chance that opening an app raises an interstitial pop-up (rate us, notifications, promo)."""
    consent: float = 0.15
    """Chance that an app's first open in an episode shows a privacy consent sheet."""
    shuffle: float = 0.5
    """Chance (per app) that list orders are shuffled."""
    filler: float = 0.5
    """Chance (per app) of procedurally generated extra content in lists."""
    loading: float = 0.08
    """Chance that a pushed screen is still loading (shows a Retry button)."""

    @staticmethod
    def off() -> "PerturbConfig":
        return PerturbConfig(0.0, 0.0, 0.0, 0.0, 0.0)

    def validate(self) -> "PerturbConfig":
        for f in fields(self):
            v = getattr(self, f.name)
            if not (0.0 <= v <= 1.0):
                raise ValueError(f"perturbation rate {f.name}={v} is not in [0, 1]")
        return self


@dataclass(frozen=True)
class FaultConfig:
    """Infrastructure faults. They raise DeviceError and must end up masked, never scored."""

    app_never_loads: float = 0.0
    """Chance that opening an app fails for good (the app never loads)."""
    device_lost: float = 0.0
    """Chance per device action that the connection to the device drops."""
    lose_at_step: int | None = None
    """Deterministic fault for tests: the device is lost at this action index."""

    def __post_init__(self) -> None:
        import math
        for name in ("app_never_loads", "device_lost"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0.0 <= v <= 1.0:
                raise ValueError(f"fault rate {name}={v!r} is not a number in [0, 1]")
        if self.lose_at_step is not None and (isinstance(self.lose_at_step, bool)
                                              or not isinstance(self.lose_at_step, int) or self.lose_at_step < 0):
            raise ValueError(f"lose_at_step must be an int >= 0 or None, got {self.lose_at_step!r}")

    @property
    def any(self) -> bool:
        return self.app_never_loads > 0 or self.device_lost > 0 or self.lose_at_step is not None
