"""What the API tests import besides fixtures: the fake endpoint's helpers and the test key. A
module of its own name, since ``from conftest import`` takes whichever ``conftest`` module was
imported first when tests of several folders run together."""
from __future__ import annotations

from navrl.api.testing import FakeChatServer, raw, reply, request_images, request_text, sleep, status  # noqa: F401

SECRET = "sk-test-SECRET-0123456789abcdef"
KEY_ENV = "NAVRL_TEST_API_KEY"
