"""Offline fixtures for the API tests: the local chat-completions server of
:mod:`navrl.api.testing` on 127.0.0.1, a test key in the environment, clients against it."""
from __future__ import annotations

import pytest
from PIL import Image

from navrl.api import APIConfig, ChatClient
from fake_api import KEY_ENV, SECRET, FakeChatServer


@pytest.fixture
def fake_server():
    s = FakeChatServer()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


@pytest.fixture
def make_client(fake_server, api_key, tmp_path):
    """Build a ChatClient against the fake server with test-sized timeouts and backoff."""
    made = []

    def make(cache: bool = False, **kw) -> ChatClient:
        cfg = dict(base_url=fake_server.url, model="test-model", api_key_env=KEY_ENV, timeout=2.0,
                   max_retries=2, backoff_base=0.01, backoff_max=0.05, jitter=0.5, seed=0)
        if cache:
            cfg["cache_dir"] = str(tmp_path / "cache")
        cfg.update(kw)
        c = ChatClient(APIConfig(**cfg))
        made.append(c)
        return c
    return make


@pytest.fixture
def screenshot():
    def make(color=(200, 220, 240), size=(120, 200)) -> Image.Image:
        return Image.new("RGB", size, color)
    return make
