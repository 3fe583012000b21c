"""A local OpenAI-compatible chat-completions server for offline tests and smoke runs.

:class:`FakeChatServer` listens on 127.0.0.1 and speaks the OpenAI wire format
(``POST /v1/chat/completions``); point ``NAVRL_API_BASE`` at its :attr:`~FakeChatServer.url`
to run the LLM judges, the API planner or task synthesis with no network. It is scriptable:
queued behaviours are used first, then ``responder(request) -> behaviour``, then ``default``.
A behaviour is a reply string or one of :func:`reply`, :func:`status`, :func:`sleep`,
:func:`raw`.
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FakeChatServer", "raw", "reply", "request_images", "request_text", "sleep", "status"]


def reply(content: str, prompt_tokens: int = 100, completion_tokens: int = 20) -> tuple:
    return ("reply", content, prompt_tokens, completion_tokens)


def status(code: int, retry_after: float | None = None) -> tuple:
    return ("status", code, retry_after)


def sleep(seconds: float, content: str = "late") -> tuple:
    return ("sleep", seconds, content)


def raw(body: bytes, code: int = 200) -> tuple:
    return ("raw", body, code)


class FakeChatServer:
    def __init__(self) -> None:
        self.script: deque = deque()
        self.responder = None
        self.default: object = reply("ok")
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length", 0))
                body = self.rfile.read(n)
                try:
                    req = json.loads(body)
                except json.JSONDecodeError:
                    req = None
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": req})
                    beh = fake._next(req)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                if isinstance(beh, str):
                    beh = reply(beh)
                kind = beh[0]
                if kind == "sleep":
                    time.sleep(beh[1])
                    beh = reply(beh[2])
                    kind = "reply"
                if kind == "reply":
                    _, content, pt, ct = beh
                    return self._send(200, {
                        "id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion", "created": 0,
                        "model": (req or {}).get("model", "?"),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}})
                if kind == "status":
                    extra = {"retry-after": str(beh[2])} if beh[2] is not None else {}
                    return self._send(beh[1], {"error": {"message": f"status {beh[1]}", "type": "test"}}, extra)
                if kind == "raw":
                    return self._send(beh[2], None, raw_body=beh[1])
                raise AssertionError(f"bad behaviour {beh!r}")

            def _send(self, code, obj, headers=None, raw_body=None):
                data = raw_body if raw_body is not None else json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def _next(self, req):
        if self.script:
            return self.script.popleft()
        if self.responder is not None:
            return self.responder(req)
        return self.default

    def push(self, *behaviours) -> "FakeChatServer":
        self.script.extend(behaviours)
        return self

    @property
    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].rstrip("/") == "/v1/chat/completions"]

    def last_text(self) -> str:
        """All text parts of the last request's messages, joined."""
        return request_text(self.chat_requests[-1]["body"])

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def request_text(body: dict) -> str:
    out = []
    for m in body["messages"]:
        c = m["content"]
        if isinstance(c, str):
            out.append(c)
        else:
            out += [p["text"] for p in c if p.get("type") == "text"]
    return "\n".join(out)


def request_images(body: dict) -> list[str]:
    out = []
    for m in body["messages"]:
        if isinstance(m["content"], list):
            out += [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
    return out
