"""The phone world's apps: every ``App`` subclass defined in a module of this package.

Adding an app is adding a module here; ``all_apps()`` finds it.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

from navrl.worlds.phone.sim.app import App

_CACHE: list[type[App]] | None = None


def app_classes() -> list[type[App]]:
    global _CACHE
    if _CACHE is None:
        found: list[type[App]] = []
        for info in pkgutil.iter_modules(__path__):
            m = importlib.import_module(f"{__name__}.{info.name}")
            for _, obj in inspect.getmembers(m, inspect.isclass):
                if issubclass(obj, App) and obj is not App and obj.__module__ == m.__name__ and obj.name:
                    found.append(obj)
        _CACHE = sorted(found, key=lambda c: c.name)
    return _CACHE


def all_apps() -> list[App]:
    return [c() for c in app_classes()]


def app_names() -> list[str]:
    return [c.name for c in app_classes()]
