"""Task templates, one module per app (multi-app templates in ``multi_*`` modules).

Importing a module registers its templates (``@register``); ``load_all`` imports every
module of this package."""
from __future__ import annotations

import importlib
import pkgutil

_loaded = False


def load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        importlib.import_module(f"{__name__}.{info.name}")
