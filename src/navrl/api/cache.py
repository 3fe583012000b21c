"""Content-hash disk cache of chat replies, so a re-run costs nothing (layer 1).

The key is the sha256 of the model name, the messages, the image bytes and the call
parameters; one JSON file per reply under ``<dir>/<key[:2]>/<key>.json``, written
atomically. Only the reply text and token usage are stored: never a key or a header.
A corrupt entry is a miss, not an error.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from navrl.fileio import atomic_write_text

log = logging.getLogger("navrl.api")


def image_digest(image) -> str:
    """sha256 of a PIL image's mode, size and pixel bytes."""
    h = hashlib.sha256()
    h.update(f"{image.mode}|{image.size[0]}x{image.size[1]}|".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def request_key(model: str, messages: list[dict], images: list | None = None, **params: Any) -> str:
    """The cache key of one chat request."""
    payload = {
        "model": model,
        "messages": messages,
        "images": [image_digest(im) for im in (images or [])],
        "params": params,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Reply cache on disk, keyed by :func:`request_key`."""

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.dir)!r})"

    def path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        p = self.path(key)
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
            log.warning("ignoring corrupt cache entry %s: %s", p, e)
            self.misses += 1
            return None
        if not isinstance(rec, dict) or not isinstance(rec.get("text"), str):
            log.warning("ignoring malformed cache entry %s", p)
            self.misses += 1
            return None
        self.hits += 1
        return rec

    def put(self, key: str, text: str, usage: dict, model: str) -> None:
        rec = {"key": key, "model": model, "text": text,
               "usage": {"prompt_tokens": int(usage.get("prompt_tokens", 0)),
                         "completion_tokens": int(usage.get("completion_tokens", 0))}}
        atomic_write_text(self.path(key), json.dumps(rec, ensure_ascii=False))

    def __len__(self) -> int:
        return sum(1 for _ in self.dir.glob("*/*.json")) if self.dir.exists() else 0
