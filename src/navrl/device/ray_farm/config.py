"""The settings of a Ray device farm (:class:`FarmConfig`), and Ray itself: an optional
extra, imported on first use (:class:`FarmUnavailable` when it is missing)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from navrl.device.backend import DeviceBackend
from navrl.device.inprocess import PhoneWorldBackend
from navrl.device.pool import PoolConfig


class FarmUnavailable(ImportError):
    """Ray is not installed (``pip install 'navrl[ray]'``) or could not be started."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise FarmUnavailable("the Ray device farm needs Ray: pip install 'navrl[ray]'") from e
    return ray


@dataclass(frozen=True)
class FarmConfig:
    """Settings of a :class:`RayFarm`."""

    hosts: int = 2
    """Device host actors (one per machine in a real farm)."""
    devices_per_host: int = 64
    """Pool size of each host: the most episodes one host runs at once."""
    backend: DeviceBackend = field(default_factory=PhoneWorldBackend)
    """What each host's pool drives (shipped to the hosts; must be picklable)."""
    pool: PoolConfig = PoolConfig()
    """Per-host pool settings (``size`` is replaced by ``devices_per_host``)."""
    call_timeout_s: float = 120.0
    """Deadline of one learner→host call (a whole batch of steps)."""
    lease_timeout_s: float = 600.0
    """Deadline of one host's share of a lease batch (restores of real devices are slow)."""
    start_timeout_s: float = 120.0
    """How long to wait for a host actor to start or restart."""
    screenshots: str = "lazy"
    """``lazy``: images fetched from the host when read; ``eager``: a PNG with every observation."""
    frames_kept: int = 8
    """Recent observations per device a host keeps for lazy screenshot fetches."""
    max_restarts: int = -1
    """Ray restarts of a dead host actor (-1: always)."""
    num_cpus_per_host: float = 1.0
    """CPUs Ray reserves for each host actor."""
    poll_linger_s: float = 0.005
    """How long a host's answer to a poll waits for more devices after the first is done
    (connected backends): a wave of devices comes back as one batch, a straggler later."""

    resources_per_host: tuple[tuple[str, float], ...] = ()
    """Custom Ray resources each host actor needs, e.g. ``(("device_host", 1),)`` with
    ``ray start --resources '{"device_host": 1}'`` on every machine that has devices:
    Ray then places exactly one host actor on each such machine."""

    def validate(self) -> "FarmConfig":
        if self.hosts <= 0 or self.devices_per_host <= 0:
            raise ValueError("hosts and devices_per_host must be positive")

        if self.screenshots not in ("lazy", "eager"):
            raise ValueError(f"screenshots must be 'lazy' or 'eager', got {self.screenshots!r}")
        return self

