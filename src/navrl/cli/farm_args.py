"""The device-farm flags of ``navrl eval`` and ``navrl train``: ``--ray [ADDRESS]`` and ``--hosts N``.

Their values go to :func:`navrl.device.ray_farm.make_device_factory`. Adding the flags
needs no Ray: ``--ray`` reports a missing ``navrl[ray]`` extra when it is used.
"""
from __future__ import annotations

import argparse

__all__ = ["add_farm_arguments"]


def add_farm_arguments(parser: argparse.ArgumentParser) -> None:
    """``--ray [ADDRESS]`` and ``--hosts N`` on ``parser``."""
    parser.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                        help="run the devices in Ray device-host actors: a local Ray instance, or the cluster at "
                             "ADDRESS (e.g. auto); needs pip install 'navrl[ray]'")
    parser.add_argument("--hosts", type=int, default=2, help="device-host actors with --ray (default 2)")
