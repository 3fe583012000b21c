"""Apps' seed data, generated once per seed and copied into each world on first use.

An app's starting data depends only on (app, world seed, the perturbation's shuffle and
filler rates, layout): :func:`seed_blob` draws it once (the same ``random`` draws a world
always made) and keeps it pickled; a world's :class:`AppData` holds such blobs and unpickles
an app's data the first time the world reads it (copy on first use), so building a world
costs no ``random`` draws and copies only the apps its task touches.

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

__all__ = ["AppData", "seed_blob"]

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


def seed_blob(app: App, seed: int, shuffle: float, filler: float, layout: str) -> tuple[tuple, bytes]:
    """(key, pickled starting data) of ``app`` in a world of ``seed``; drawn once per key."""
    key = (type(app), app.name, seed, shuffle, filler, layout)
    blob = _BLOBS.get(key)
    if blob is None:
        blob = _BLOBS.put(key, _draw(app, seed, shuffle, filler, layout))
    return key, blob


class _Seed:
    """An app's data not read yet in this world: its seed key and pickled data (``blob``
    None: not looked up yet — a restored world finds or draws it on first read)."""

    __slots__ = ("key", "blob")

    def __init__(self, key: tuple | None, blob: bytes | None):
        self.key, self.blob = key, blob


def _blob_for(key: tuple) -> bytes:
    blob = _BLOBS.get(key)
    if blob is None:
        cls, name, seed, shuffle, filler, layout = key
        _, blob = seed_blob(cls(), seed, shuffle, filler, layout)
    return blob


def _rebuild(items: tuple) -> "AppData":
    d = AppData()
    for name, how, v in items:
        d._d[name] = _Seed(v, None) if how == "k" else (_Seed(None, v) if how == "b" else v)
    return d


class AppData(MutableMapping):
    """``WorldState.data``: app name -> that app's data dict, unpickled from its seed blob on
    first read (the world may change what it reads, so a read is a copy)."""

    __slots__ = ("_d",)

    def __init__(self, seeds: dict[str, tuple[tuple, bytes]] | None = None):
        self._d: dict[str, Any] = {k: _Seed(key, blob) for k, (key, blob) in (seeds or {}).items()}

    def __getitem__(self, name: str) -> dict:
        v = self._d[name]
        if type(v) is _Seed:
            v = self._d[name] = pickle.loads(v.blob if v.blob is not None else _blob_for(v.key))  # type: ignore[arg-type]
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
                items.append((name, "b", v.blob))
        return _rebuild, (tuple(items),)

    def __repr__(self) -> str:
        return f"AppData({dict(self.items())!r})"
