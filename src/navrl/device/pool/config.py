"""The settings of one device pool: :class:`PoolConfig`, and which errors get a retry."""
from __future__ import annotations

from dataclasses import dataclass

from navrl.device.adaptive import AdaptiveConfig

MAX_FREE_RETRIES = 8
"""Adaptive pools: restores of one lease that may miss their deadline while the limit drops
(each retried behind the lowered limit) before they count against ``lease_attempts``."""

RETRY_REASONS = frozenset({"timeout", "connection", "device_lost", "device_offline", "adb_error", "wda_error"})
"""DeviceError reasons that get one reconnect-and-retry (transport trouble, not a verdict on the task)."""


@dataclass(frozen=True)
class PoolConfig:
    """Settings of one :class:`~navrl.device.pool.DevicePool`."""

    size: int = 64
    """Most devices the pool holds at once (they are created lazily, on demand)."""
    call_timeout_s: float | None = 30.0
    """Deadline of every single device call (observe, act, snapshot, restore, health).
    None runs calls inline without a deadline (only for in-process devices that cannot hang)."""
    restore_timeout_s: float | None = 180.0
    """Deadline of ``restore`` (loading an emulator snapshot takes far longer than a tap);
    None uses ``call_timeout_s``."""
    reconnect_timeout_s: float = 60.0
    """Deadline of one ``backend.reconnect`` or ``backend.create``."""
    lease_timeout_s: float = 60.0
    """How long :meth:`~navrl.device.pool.DevicePool.lease` waits for a free device before PoolExhausted."""
    lease_attempts: int = 3
    """Devices tried per lease before LeaseFailed (each failed restore/probe counts a failure)."""
    max_consecutive_failures: int = 3
    """A device failing this many times in a row is quarantined and replaced."""
    retry_reasons: frozenset = RETRY_REASONS
    """DeviceError reasons that get one reconnect-and-retry; other errors propagate at once."""
    snapshot_cache: int = 1024
    """Task snapshots kept (LRU) so that a task's snapshot is made once per pool."""
    max_blocking_calls: int | None = None
    """Most calls of blocking devices (adb, WebDriverAgent, browsers: devices without async
    methods) running at once, each in its device's own worker thread; None: one per device
    (``size``). A cap protects a shared server (one adb server for many devices). Devices
    with async methods wait on the pool's event loop and are not counted."""
    spare: int = 0
    """Idle devices the pool may keep beyond ``size`` for their affinity
    (:meth:`DeviceBackend.affinity_key`): a lease whose key no idle device has makes a new
    device while the pool holds fewer than ``size + spare`` instead of taking over an idle
    device that keeps another key warm (a browser page showing another MiniWoB++ task: a page
    load per switch). At most ``size`` devices are leased at once either way."""
    adaptive: AdaptiveConfig | None = None
    """None: up to ``size`` devices in flight whatever happens. An :class:`AdaptiveConfig`
    (connected backends only): the devices in flight (restoring or leased) are held to an
    :class:`~navrl.device.adaptive.AdaptiveLimit` that drops when calls miss their deadlines
    (or restores turn slow) and rises again when restores are fast; a lease waits for room
    instead of failing, and a device given back while the pool holds more than the limit is
    closed."""

    def validate(self) -> "PoolConfig":
        if self.size <= 0:
            raise ValueError(f"pool size must be positive, got {self.size}")
        if self.call_timeout_s is not None and self.call_timeout_s <= 0:
            raise ValueError("call_timeout_s must be positive or None")
        if self.spare < 0:
            raise ValueError(f"spare must be >= 0, got {self.spare}")
        if self.lease_attempts <= 0 or self.max_consecutive_failures <= 0:
            raise ValueError("lease_attempts and max_consecutive_failures must be positive")
        if self.max_blocking_calls is not None and self.max_blocking_calls <= 0:
            raise ValueError("max_blocking_calls must be positive or None")
        if self.adaptive is not None:
            self.adaptive.validate()
        return self
