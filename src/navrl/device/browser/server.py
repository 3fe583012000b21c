"""A static file server on 127.0.0.1 for local web apps (the MiniWoB++ pages, test pages).

One server per directory per process, started on first use on a free port, in a daemon
thread; it serves files under its root only (no directory traversal) and never logs
(a client dropping its connection, as a closed tab does, is not an error).
"""
from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
from pathlib import Path

__all__ = ["serve_directory", "StaticServer"]


class _Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "max-age=3600")
        super().end_headers()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A browser tab closed (or reset) a keep-alive connection: nothing to report. Other
        errors still print (the stdlib's behaviour)."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class StaticServer:
    def __init__(self, root: str | os.PathLike, host: str = "127.0.0.1", port: int = 0):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise FileNotFoundError(f"{self.root} is not a directory")
        handler = functools.partial(_Handler, directory=str(self.root))
        self.httpd = _Server((host, port), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name=f"navrl-static-{self.root.name}",
                                       daemon=True)
        self.thread.start()

    @property
    def origin(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str = "") -> str:
        return f"{self.origin}/{path.lstrip('/')}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


_servers: dict[Path, StaticServer] = {}
_lock = threading.Lock()


def serve_directory(root: str | os.PathLike) -> StaticServer:
    """The (shared) server of ``root`` for this process."""
    key = Path(root).resolve()
    with _lock:
        s = _servers.get(key)
        if s is None:
            s = _servers[key] = StaticServer(key)
        return s
