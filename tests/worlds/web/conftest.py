"""The web world's tests run on the browser device's fixtures (one Chromium, pages served from
127.0.0.1): loaded from tests/device/browser/conftest.py, not copied."""
from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "navrl_browser_test_fixtures", Path(__file__).resolve().parents[2] / "device" / "browser" / "conftest.py")
_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_browser)  # type: ignore[union-attr]

host, site, other_site, silent_server = _browser.host, _browser.site, _browser.other_site, _browser.silent_server
FIXTURES = _browser.FIXTURES
