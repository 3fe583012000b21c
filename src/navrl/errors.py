"""Errors shared across layers (layer 1: imports nothing from navrl).

:class:`Outage` is raised when infrastructure failed so completely that there is no
result to report (every trajectory of several updates, or every episode of an
evaluation, masked). It is not bad input: the CLI reports it as one line and exit code 3.
"""
from __future__ import annotations


class Outage(RuntimeError):
    """Infrastructure failed for everything: nothing was measured, so nothing is reported as a result."""
