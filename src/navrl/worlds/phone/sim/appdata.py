"""Apps' seed data, generated once per seed and copied into each world on first use.

An app's starting data depends only on (app, world seed, the perturbation's shuffle and
filler rates, layout): :func:`seed_blob` draws it once (the same ``random`` draws a world
always made, from a ``random.Random`` of its own, so the order in which apps are drawn changes
nothing) and keeps it pickled; a world's :class:`AppData` holds the apps' seed keys, draws an
app's blob the first time the world reads that app (or pickles it, for an app outside the
registry) and unpickles it then (copy on first use), so building a world costs no ``random``
draws, even for a new seed, and draws and copies only the apps its task touches.

An :class:`AppData` pickles (world snapshots) with the untouched apps as their seed keys,
not their data; unpickling looks the blobs up again (or draws them, in a fresh process).
"""
from __future__ import annotations

import pickle
import random
from collections.abc import MutableMapping
from typing import Any, Iterator

from navrl.worlds.phone.sim.app import App, Variation
from navrl.lru import BoundedCache

__all__ = ["AppData", "seed_blob", "seed_key"]

_BLOBS: BoundedCache[tuple, bytes] = BoundedCache(20_000)
_INTERN: BoundedCache[bytes, bytes] = BoundedCache(20_000)   # equal blobs of different seeds share memory


def _draw(app: App, seed: int, shuffle: float, filler: float, layout: str) -> bytes:
    """What ``PhoneWorld`` always drew for ``app``: its variation, then its data."""
    app_rng = random.Random(f"{seed}/{app.name}")
    var = Variation(shuffle=app_rng.random() < shuffle,
                    filler=(app_rng.randint(3, 8) if app_rng.random() < filler else 0),
                    layout=layout, seed=seed)
    blob = pickle.dumps(app.init_data(app_rng, var), protocol=pickle.HIGHEST_PROTOCOL)
    return _INTERN.get(blob) or _INTERN.put(blob, blob)


def seed_key(app: App, seed: int, shuffle: float, filler: float, layout: str) -> tuple:
    """The key of ``app``'s starting data in a world of ``seed`` (nothing drawn)."""
    return (type(app), app.name, seed, shuffle, filler, layout)


def seed_blob(app: App, seed: int, shuffle: float, filler: float, layout: str) -> tuple[tuple, bytes]:
    """(key, pickled starting data) of ``app`` in a world of ``seed``; drawn once per key."""
    key = seed_key(app, seed, shuffle, filler, layout)
    blob = _BLOBS.get(key)
    if blob is None:
        blob = _BLOBS.put(key, _draw(app, seed, shuffle, filler, layout))
    return key, blob


class _Seed:
    """An app's data not read yet in this world: its seed key, the app (None in a restored
    world: the key's class makes one) and its pickled data (``blob`` None: not drawn or looked
    up yet — that happens on first read)."""

    __slots__ = ("key", "blob", "app")

    def __init__(self, key: tuple | None, blob: bytes | None, app: App | None = None):
        self.key, self.blob, self.app = key, blob, app

    def get_blob(self) -> bytes:
        if self.blob is None:
            key = self.key
            blob = _BLOBS.get(key)     # type: ignore[arg-type]
            if blob is None:
                cls, name, seed, shuffle, filler, layout = key   # type: ignore[misc]
                _, blob = seed_blob(self.app if self.app is not None else cls(), seed, shuffle, filler, layout)
            self.blob = blob
        return self.blob


def _rebuild(items: tuple) -> "AppData":
    d = AppData()
    for name, how, v in items:
        d._d[name] = _Seed(v, None) if how == "k" else (_Seed(None, v) if how == "b" else v)
    return d


class AppData(MutableMapping):
    """``WorldState.data``: app name -> that app's data dict, unpickled from its seed blob on
    first read (the world may change what it reads, so a read is a copy)."""

    __slots__ = ("_d",)

    def __init__(self, seeds: dict[str, tuple[tuple, App]] | None = None):
        """``seeds``: app name -> (its :func:`seed_key`, the app); drawn on first read."""
        self._d: dict[str, Any] = {k: _Seed(key, None, app) for k, (key, app) in (seeds or {}).items()}

    def __getitem__(self, name: str) -> dict:
        v = self._d[name]
        if type(v) is _Seed:
            v = self._d[name] = pickle.loads(v.get_blob())
        return v

    def __setitem__(self, name: str, value: dict) -> None:
        self._d[name] = value

    def __delitem__(self, name: str) -> None:
        del self._d[name]

    def __contains__(self, name: object) -> bool:
        return name in self._d

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._d))

    def __len__(self) -> int:
        return len(self._d)

    def __reduce__(self) -> tuple:
        items = []
        for name, v in self._d.items():
            if type(v) is not _Seed:
                items.append((name, "d", v))
            elif v.blob is None or v.key is not None and v.key[0].__module__.startswith("navrl.worlds.phone.sim.apps."):
                items.append((name, "k", v.key))      # a registered app: its key re-finds the data
            else:
                items.append((name, "b", v.get_blob()))
        return _rebuild, (tuple(items),)

    def __repr__(self) -> str:
        return f"AppData({dict(self.items())!r})"
