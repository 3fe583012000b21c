"""The device-farm flags of ``navrl eval`` and ``navrl train``: ``--ray [ADDRESS]``, ``--hosts N``
and ``--parallel N``.

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
    parser.add_argument("--parallel", type=_positive, default=None, metavar="N",
                        help="most devices at once (browser pages, phones); the episodes of a bigger batch queue "
                             "and start as earlier ones finish (default: browser pages sized to the machine, "
                             "8 per core, fewer while the machine is too busy; other devices: the whole batch)")


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return n
