"""Browser tests: one Chromium process (the process-wide host) serves every test; pages are
served from 127.0.0.1 only. Skipped, with the reason, only where no Chromium exists."""
from __future__ import annotations

import http.server
import socket
import threading
from pathlib import Path

import pytest


FIXTURES = Path(__file__).parent / "fixtures"

@pytest.fixture(scope="session")
def host():
    from navrl.device.browser.host import default_host
    h = default_host()
    h.ensure_started()
    return h


@pytest.fixture(scope="session")
def site():
    """The fixture pages on http://127.0.0.1:<port>/."""
    from navrl.device.browser.server import serve_directory
    return serve_directory(FIXTURES)


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    hits: list[str] = []

    def log_message(self, *a):  # noqa: D401 - quiet
        pass

    def do_GET(self):  # noqa: N802 - stdlib name
        type(self).hits.append(self.path)
        return super().do_GET()


@pytest.fixture(scope="session")
def other_site():
    """A second origin (another port on 127.0.0.1) that records every request it gets."""
    import functools
    handler = type("Handler", (_CountingHandler,), {"hits": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(FIXTURES / "other")))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.hits = handler.hits  # type: ignore[attr-defined]
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="session")
def silent_server():
    """An origin that accepts connections and never answers (navigation timeouts)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    conns = []
    stop = threading.Event()

    def accept():
        s.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = s.accept()
                conns.append(c)
            except OSError:
                continue
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    stop.set()
    for c in conns:
        c.close()
    s.close()
