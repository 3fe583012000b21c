"""The device source of a run, what ``--ray [ADDRESS]`` selects: :func:`make_device_factory`
returns the in-process :class:`~navrl.device.pool.DevicePool` or a :class:`RayFarm`."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from navrl.device.backend import DeviceBackend
from navrl.device.inprocess import PhoneWorldBackend
from navrl.device.pool import DeviceFarm, DevicePool, PoolConfig
from navrl.device.ray_farm.config import FarmConfig
from navrl.device.ray_farm.farm import RayFarm


def make_device_factory(ray_address: str | None = None, *, devices: int = 512, hosts: int | None = None,
                        backend: DeviceBackend | None = None, pool: PoolConfig | None = None,
                        screenshots: str = "lazy", **ray_init: Any) -> DeviceFarm:
    """The device source for a run: what ``--ray [ADDRESS]`` selects.

    - ``ray_address=None``: the embedded default, an in-process :class:`DevicePool` of at
      most ``devices`` devices (made on demand, so a generous bound costs nothing).
    - ``"local"`` (``--ray`` without an address): start a local Ray instance and ``hosts``
      host actors (default 2) with ``ceil(devices / hosts)`` devices each.
    - any other string: join that Ray cluster (``"auto"``, ``"ray://head:10001"`` …).

    The result has ``lease_batch``/``release_batch``: pass it as ``devices=`` to
    :meth:`navrl.rollout.runner.EpisodeRunner.run` (calling it with a batch's tasks returns
    itself, so it also serves where a ``devices_factory(tasks)`` is expected); log its
    ``stats()`` (``masked_host_lost`` counts host-lost masks); ``close()`` it at the end.
    A batch larger than ``devices`` runs as a rolling queue (the runner starts the episodes
    beyond it as earlier ones finish). Raises FarmUnavailable when Ray is needed but missing.
    """
    be = backend or PhoneWorldBackend()
    if ray_address is None:
        return DevicePool(be, dataclasses.replace(pool or PoolConfig(), size=devices))
    h = hosts or 2
    cfg = FarmConfig(hosts=h, devices_per_host=math.ceil(devices / h), backend=be, pool=pool or PoolConfig(),
                     screenshots=screenshots)
    return RayFarm(cfg, address=ray_address, **ray_init)
