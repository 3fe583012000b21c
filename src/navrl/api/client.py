"""One OpenAI-compatible chat client (layer 1: imports nothing from navrl but fileio).

- Any endpoint that speaks ``POST {base_url}/chat/completions`` (OpenAI, vLLM, SGLang,
  Ollama, LiteLLM, ...). Images go as base64 PNG ``data:`` URLs in standard
  ``image_url`` content parts, appended in order to the last user message.
- The API key is read from the environment variable *named* by
  :attr:`APIConfig.api_key_env`; it is never logged, never part of a repr or str, and
  never written to a file (the cache stores reply text and token counts only).
- Timeouts, 408/429, 5xx and connection errors are retried with exponential backoff and
  seeded jitter; after :attr:`APIConfig.max_retries` retries :class:`APIUnavailable`
  is raised. Other HTTP errors (400, 401, 403, 404 ...) raise :class:`APIRequestError`
  at once: retrying would not help.
- A circuit breaker: after :attr:`APIConfig.breaker_threshold` failed attempts in a row the
  endpoint counts as dead; the call stops retrying and later calls raise
  :class:`APIUnavailable` at once (no request) until :attr:`APIConfig.breaker_cooldown`
  seconds have passed, then one trial request decides. A dead endpoint costs seconds, not
  minutes per call.
- Any malformed response body (not JSON, nested too deeply, fields of the wrong type) is
  a failed attempt like a 5xx, never an uncaught exception.
- Credentials inside the base URL (``http://user:KEY@host/v1``) are redacted in every
  repr, log line and exception (:func:`redact_url`).
- :meth:`ChatClient.chat_json` adds a JSON protocol on top: the reply is parsed and
  validated, malformed replies are re-asked, and only a validated reply is cached.
"""
from __future__ import annotations

import base64
import io
import json
import logging
import os
import random
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar
from urllib.parse import urlsplit, urlunsplit

from navrl.api.cache import ResponseCache, request_key
from navrl.api.prices import PriceTable

log = logging.getLogger("navrl.api")
T = TypeVar("T")

ENV_BASE = "NAVRL_API_BASE"
ENV_MODEL = "NAVRL_API_MODEL"
ENV_KEY_ENV = "NAVRL_API_KEY_ENV"
ENV_CACHE = "NAVRL_API_CACHE"
ENV_PRICES = "NAVRL_API_PRICES"
NO_KEY = "EMPTY"
"""Sent as the key when the key variable is unset (what keyless local servers expect)."""


# ---------------------------------------------------------------------- errors
class APIError(RuntimeError):
    """Base class of the client's errors."""


class APIUnavailable(APIError):
    """The endpoint stayed unreachable (timeouts, 429, 5xx, connection errors) after all retries."""

    def __init__(self, message: str, attempts: int = 0, last_error: str = ""):
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error


class APIRequestError(APIError):
    """The endpoint rejected the request (4xx other than 408/429); not retried."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status

    @property
    def is_config_error(self) -> bool:
        """401/403/404: a wrong key, model name or URL, not a passing outage."""
        return self.status in (401, 403, 404)


class MalformedReply(APIError):
    """The model's reply failed to parse or validate even after re-asking."""

    def __init__(self, message: str, text: str = ""):
        super().__init__(message)
        self.text = text


@contextmanager
def outages_as(wrap: Callable[[APIError], Exception],
               also: tuple[type[APIError], ...] = ()) -> Iterator[None]:
    """Raise ``wrap(e) from e`` for an outage inside the block: :class:`APIUnavailable`,
    an :class:`APIRequestError` that is not a configuration error, and the classes in
    ``also``. A configuration error (wrong key, model or URL) goes through as it is: no
    retry or fallback helps with that."""
    try:
        yield
    except APIRequestError as e:
        if e.is_config_error:
            raise
        raise wrap(e) from e
    except (APIUnavailable, *also) as e:
        raise wrap(e) from e


# ---------------------------------------------------------------------- config
_USERINFO = re.compile(r"(?<=//)[^/@\s]*@")


def redact_url(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` part replaced by ``***@`` (safe to log)."""
    if url is None:
        return None
    s = str(url)
    try:
        parts = urlsplit(s)
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            host = parts.netloc.rsplit("@", 1)[-1]
            s = urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))
    except ValueError:
        pass
    return _USERINFO.sub("***@", s)


def redact_text(text: str) -> str:
    """Any ``scheme://user:password@`` inside free text with its credentials replaced by ``***@``."""
    return _USERINFO.sub("***@", text)


def _url_secrets(url: str | None) -> list[str]:
    """The user name and password inside a URL (to scrub them from error texts)."""
    if not url:
        return []
    try:
        parts = urlsplit(str(url))
        out = [parts.password, parts.username]
    except ValueError:
        m = _USERINFO.search(str(url))
        out = m.group(0)[:-1].split(":") if m else []
    return [x for x in out if x and len(x) >= 3]


class _RedactURLs(logging.Filter):
    """Rewrites a log record so that no URL in it carries credentials (the HTTP libraries
    log full request URLs at INFO/DEBUG)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is the logger's problem, not ours
            return True
        if "@" in msg:
            record.msg, record.args = redact_text(msg), ()
        return True


_REDACT = _RedactURLs()
_TRANSPORT_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "openai._base_client")


def _install_log_redaction() -> None:
    for name in _TRANSPORT_LOGGERS:
        lg = logging.getLogger(name)
        if _REDACT not in lg.filters:
            lg.addFilter(_REDACT)


@dataclass
class APIConfig:
    """Where and how to call an OpenAI-compatible chat endpoint.

    :meth:`from_env` fills it from ``NAVRL_API_BASE``, ``NAVRL_API_MODEL``,
    ``NAVRL_API_KEY_ENV``, ``NAVRL_API_CACHE`` and ``NAVRL_API_PRICES``.
    """

    base_url: str | None = None
    """Endpoint root, e.g. ``https://api.openai.com/v1`` or ``http://localhost:8000/v1``."""
    model: str | None = None
    """Model name sent with every request."""
    api_key_env: str = "OPENAI_API_KEY"
    """NAME of the environment variable holding the API key (the key itself is never stored here)."""
    timeout: float = 60.0
    """Seconds one HTTP request may take before it counts as a timeout (and is retried)."""
    max_retries: int = 4
    """Retries after the first attempt on timeouts, 408, 429, 5xx and connection errors."""
    backoff_base: float = 1.0
    """Seconds before the first retry; doubled for every further retry."""
    backoff_max: float = 30.0
    """Upper bound of one backoff wait (also caps a server's Retry-After)."""
    jitter: float = 0.25
    """Each wait is multiplied by ``1 + jitter * u``, u uniform in [0, 1) from a seeded RNG."""
    seed: int = 0
    """Seed of the jitter RNG (runs are reproducible)."""
    temperature: float = 0.0
    """Default sampling temperature."""
    max_tokens: int = 1024
    """Default cap on completion tokens."""
    max_tokens_param: str = "max_tokens"
    """Request field for that cap: ``max_tokens`` or ``max_completion_tokens`` (newer OpenAI models)."""
    cache_dir: str | None = None
    """Reply cache directory; None: no cache."""
    prices: PriceTable = field(default_factory=PriceTable)
    """USD per 1M input/output tokens per model (default entry: zero)."""
    breaker_threshold: int = 5
    """Failed attempts in a row (timeouts, 408/429/5xx, connection errors, malformed responses)
    after which the endpoint counts as dead: calls fail at once until ``breaker_cooldown``. 0: off."""
    breaker_cooldown: float = 30.0
    """Seconds an open circuit refuses calls before one trial request is let through."""

    def __repr__(self) -> str:   # the base URL may carry credentials
        body = ", ".join(f"{f.name}={redact_url(self.base_url) if f.name == 'base_url' else getattr(self, f.name)!r}"
                         for f in fields(self))
        return f"APIConfig({body})"

    __str__ = __repr__

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise ValueError("timeout must be > 0")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.backoff_base < 0 or self.backoff_max < 0 or self.jitter < 0:
            raise ValueError("backoff_base, backoff_max and jitter must be >= 0")
        if self.max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError("max_tokens_param must be 'max_tokens' or 'max_completion_tokens'")
        if isinstance(self.breaker_threshold, bool) or not isinstance(self.breaker_threshold, int) \
                or self.breaker_threshold < 0:
            raise ValueError("breaker_threshold must be an int >= 0")
        if not self.breaker_cooldown >= 0:
            raise ValueError("breaker_cooldown must be >= 0")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env or ""):
            raise ValueError(f"api_key_env must be an environment variable NAME, got {self.api_key_env!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> "APIConfig":
        """Config from the environment; keyword overrides that are not None win."""
        env = os.environ if env is None else env
        kw: dict[str, Any] = {}
        if env.get(ENV_BASE):
            kw["base_url"] = env[ENV_BASE]
        if env.get(ENV_MODEL):
            kw["model"] = env[ENV_MODEL]
        if env.get(ENV_KEY_ENV):
            kw["api_key_env"] = env[ENV_KEY_ENV]
        if env.get(ENV_CACHE):
            kw["cache_dir"] = env[ENV_CACHE]
        if env.get(ENV_PRICES):
            kw["prices"] = PriceTable.from_file(env[ENV_PRICES])
        names = {f.name for f in fields(cls)}
        bad = set(overrides) - names
        if bad:
            raise TypeError(f"unknown APIConfig fields: {', '.join(sorted(bad))}")
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kw)

    def require(self) -> "APIConfig":
        """Raise ValueError unless an endpoint and a model are configured."""
        missing = [n for n, v in ((ENV_BASE, self.base_url), (ENV_MODEL, self.model)) if not v]
        if missing:
            raise ValueError(
                "no API endpoint configured: set " + " and ".join(missing)
                + f" (e.g. {ENV_BASE}=https://api.openai.com/v1 {ENV_MODEL}=<model>); the key is read from "
                f"${self.api_key_env} (change the variable name with {ENV_KEY_ENV})")
        return self


# ---------------------------------------------------------------------- results
@dataclass
class ChatResult:
    text: str
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    """Token counts: prompt_tokens, completion_tokens."""
    cost: float = 0.0
    """USD of this call (0 for a cache hit)."""
    model: str = ""
    cached: bool = False
    attempts: int = 0
    """HTTP attempts made (0 for a cache hit)."""
    finish_reason: str | None = None

    def usage_dict(self) -> dict:
        """``{prompt_tokens, completion_tokens, cost}`` (what PlannerOutput.usage records)."""
        return {"prompt_tokens": self.usage.get("prompt_tokens", 0),
                "completion_tokens": self.usage.get("completion_tokens", 0), "cost": self.cost}


# ---------------------------------------------------------------------- helpers
def image_data_url(image) -> str:
    """A PIL image as a base64 PNG data URL (zlib level 1: a phone screenshot encodes several
    times faster than at PNG's default level, for a somewhat larger request; every judge call
    sends one or more)."""
    buf = io.BytesIO()
    im = image if image.mode in ("RGB", "RGBA", "L", "LA", "P", "1") else image.convert("RGB")
    im.save(buf, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole text, a fenced block, or the first object/array in it."""
    if text is None or not text.strip():
        raise ValueError("empty reply")
    try:
        return _extract_json(text.strip())
    except RecursionError:
        raise ValueError("the reply's JSON nests too deeply") from None


def _extract_json(s: str) -> Any:
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        pass
    for m in _FENCE.finditer(s):
        try:
            return json.loads(m.group(1).strip())
        except json.JSONDecodeError:
            continue
    dec = json.JSONDecoder()
    for i, ch in enumerate(s):
        if ch in "{[":
            try:
                return dec.raw_decode(s, i)[0]
            except json.JSONDecodeError:
                continue
    raise ValueError(f"no JSON value in reply: {s[:120]!r}")


def _check_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    if not messages:
        raise ValueError("messages must not be empty")
    out = []
    for m in messages:
        if not isinstance(m, Mapping) or m.get("role") not in ("system", "user", "assistant"):
            raise ValueError(f"each message needs a role of system/user/assistant, got {m!r:.80}")
        if not isinstance(m.get("content"), str):
            raise ValueError("message content must be a string (pass images with images=[...])")
        out.append({"role": m["role"], "content": m["content"]})
    return out


# ---------------------------------------------------------------------- client
class ChatClient:
    """Chat completions against :class:`APIConfig`'s endpoint, with retries, costs and a cache.

    Thread-safe: one client may serve several worker threads.
    """

    def __init__(self, config: APIConfig, *, cache: ResponseCache | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.config = config.require()
        _install_log_redaction()
        self.cache = cache if cache is not None else (ResponseCache(config.cache_dir) if config.cache_dir else None)
        self._sleep = sleep
        self._rng = random.Random(config.seed)
        self._lock = threading.Lock()
        self._client = None
        self.totals = {"calls": 0, "cached": 0, "requests": 0, "retries": 0, "refused": 0,
                       "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        self._fails = 0              # failed attempts in a row (the circuit breaker's count)
        self._open_until = 0.0       # monotonic time until which the circuit refuses calls
        self._clock = time.monotonic

    @classmethod
    def from_env(cls, **overrides: Any) -> "ChatClient":
        return cls(APIConfig.from_env(**overrides))

    def __repr__(self) -> str:
        return f"ChatClient(model={self.config.model!r}, base_url={self.url!r})"

    __str__ = __repr__

    def __getstate__(self):  # never pickle the key (held by the openai client)
        raise TypeError("ChatClient cannot be pickled; build one per process from its APIConfig")

    @property
    def model(self) -> str:
        return str(self.config.model)

    @property
    def url(self) -> str | None:
        """The base URL with credentials redacted (what logs and errors show)."""
        return redact_url(self.config.base_url)

    @property
    def circuit_open(self) -> bool:
        """True while the breaker refuses calls."""
        with self._lock:
            return self._clock() < self._open_until

    # -- transport ----------------------------------------------------------------------
    def _key(self) -> str:
        key = os.environ.get(self.config.api_key_env)
        if not key:
            log.warning("$%s is not set; calling %s without an API key", self.config.api_key_env, self.url)
            return NO_KEY
        return key

    def _openai(self):
        with self._lock:
            if self._client is None:
                import openai
                self._client = openai.OpenAI(api_key=self._key(), base_url=self.config.base_url,
                                             timeout=self.config.timeout, max_retries=0)
            return self._client

    def _scrub(self, text: str) -> str:
        key = os.environ.get(self.config.api_key_env)
        s = redact_text(str(text))
        for secret in ([key] if key and len(key) >= 4 else []) + _url_secrets(self.config.base_url):
            s = s.replace(secret, "***")
        return s[:300]

    # -- circuit breaker ----------------------------------------------------------------
    def _breaker_check(self) -> None:
        with self._lock:
            now = self._clock()
            if now < self._open_until:
                self.totals["refused"] += 1
                raise APIUnavailable(f"{self.url} unavailable: circuit open after {self._fails} failed attempts in a "
                                     f"row; no calls for another {self._open_until - now:.0f} s", 0, "circuit open")

    def _breaker_fail(self) -> bool:
        """Count a failed attempt; True when the circuit (now) is open."""
        c = self.config
        with self._lock:
            self._fails += 1
            if c.breaker_threshold and self._fails >= c.breaker_threshold:
                self._open_until = self._clock() + c.breaker_cooldown
                return True
            return False

    def _breaker_ok(self) -> None:
        with self._lock:
            self._fails = 0
            self._open_until = 0.0

    def _delay(self, retry: int, retry_after: float | None) -> float:
        c = self.config
        with self._lock:
            u = self._rng.random()
        d = min(c.backoff_max, c.backoff_base * (2 ** retry)) * (1.0 + c.jitter * u)
        if retry_after is not None and retry_after > 0:
            d = max(d, min(retry_after, c.backoff_max))
        return d

    def _request(self, payload: dict) -> tuple[str, dict, str | None, int]:
        import openai
        c = self.config
        client = self._openai()
        last = ""
        attempts = 0
        for attempt in range(c.max_retries + 1):
            retry_after = None
            self._breaker_check()
            with self._lock:
                self.totals["requests"] += 1
            attempts += 1
            try:
                resp = client.chat.completions.create(**payload)
                text, usage, finish = _parse_completion(resp)
                self._breaker_ok()
                return text, usage, finish, attempt + 1
            except openai.APIStatusError as e:
                status = e.status_code
                if status in (408, 429) or status >= 500:
                    last = f"HTTP {status}"
                    ra = e.response.headers.get("retry-after") if e.response is not None else None
                    try:
                        retry_after = float(ra) if ra is not None else None
                    except ValueError:
                        retry_after = None
                else:
                    hint = (f" (check ${c.api_key_env})" if status in (401, 403) else
                            " (check the model name and base URL)" if status == 404 else "")
                    self._breaker_ok()   # the endpoint answered: it is alive
                    raise APIRequestError(f"{self.url} rejected the request: HTTP {status}: "
                                          f"{self._scrub(e.message)}{hint}", status) from None
            except openai.APITimeoutError:
                last = f"timeout after {c.timeout:g}s"
            except openai.APIConnectionError as e:
                last = f"connection error: {self._scrub(type(e.__cause__).__name__ if e.__cause__ else e)}"
            except (_Transient, openai.APIResponseValidationError, ValueError, TypeError, AttributeError, KeyError,
                    IndexError, RecursionError) as e:
                # a malformed body (not JSON, nested too deeply, wrong types): a failed attempt, never a crash
                last = f"bad response: {type(e).__name__}: {self._scrub(e)[:120]}"
            if self._breaker_fail():
                log.warning("chat endpoint %s failed %d attempts in a row (%s); circuit open for %.0f s",
                            self.url, self._fails, last, c.breaker_cooldown)
                raise APIUnavailable(f"{self.url} unavailable: {self._fails} failed attempts in a row, circuit open "
                                     f"for {c.breaker_cooldown:g} s: {last}", attempts, last)
            if attempt < c.max_retries:
                d = self._delay(attempt, retry_after)
                with self._lock:
                    self.totals["retries"] += 1
                log.warning("chat request to %s failed (%s); retry %d/%d in %.2fs", self.url, last,
                            attempt + 1, c.max_retries, d)
                self._sleep(d)
        raise APIUnavailable(f"{self.url} unavailable after {c.max_retries + 1} attempts: {last}",
                             c.max_retries + 1, last)

    # -- public -------------------------------------------------------------------------
    def build_payload(self, messages: Sequence[Mapping[str, Any]], images: Sequence = (), json_mode: bool = False,
                      temperature: float | None = None, max_tokens: int | None = None) -> dict:
        """The chat-completions request body (images as data URLs on the last user message)."""
        msgs: list[dict[str, Any]] = _check_messages(messages)
        if images:
            idx = max((i for i, m in enumerate(msgs) if m["role"] == "user"), default=None)
            if idx is None:
                raise ValueError("images need a user message to attach to")
            parts: list[dict[str, Any]] = [{"type": "text", "text": msgs[idx]["content"]}]
            parts += [{"type": "image_url", "image_url": {"url": image_data_url(im)}} for im in images]
            msgs[idx] = {"role": "user", "content": parts}
        p: dict[str, Any] = {"model": self.model, "messages": msgs,
                             "temperature": self.config.temperature if temperature is None else temperature,
                             self.config.max_tokens_param: self.config.max_tokens if max_tokens is None else max_tokens}
        if json_mode:
            p["response_format"] = {"type": "json_object"}
        return p

    def _key_for(self, messages, images, json_mode, temperature, max_tokens, **extra) -> str:
        c = self.config
        return request_key(self.model, _check_messages(messages), list(images), endpoint=self.url,
                           json_mode=bool(json_mode),
                           temperature=c.temperature if temperature is None else temperature,
                           max_tokens=c.max_tokens if max_tokens is None else max_tokens, **extra)

    def _account(self, r: ChatResult) -> ChatResult:
        with self._lock:
            t = self.totals
            t["calls"] += 1
            t["cached"] += int(r.cached)
            t["prompt_tokens"] += r.usage.get("prompt_tokens", 0)
            t["completion_tokens"] += r.usage.get("completion_tokens", 0)
            t["cost"] += r.cost
        return r

    def _raw(self, messages, images, json_mode, temperature, max_tokens) -> ChatResult:
        payload = self.build_payload(messages, images, json_mode, temperature, max_tokens)
        text, usage, finish, attempts = self._request(payload)
        cost = self.config.prices.cost(self.model, usage["prompt_tokens"], usage["completion_tokens"])
        return ChatResult(text, usage, cost, self.model, False, attempts, finish)

    def chat(self, messages: Sequence[Mapping[str, Any]], images: Sequence = (), json_mode: bool = False,
             temperature: float | None = None, max_tokens: int | None = None, use_cache: bool = True) -> ChatResult:
        """One chat completion. Raises APIUnavailable / APIRequestError."""
        key = None
        if use_cache and self.cache is not None:
            key = self._key_for(messages, images, json_mode, temperature, max_tokens)
            rec = self.cache.get(key)
            if rec is not None:
                return self._account(ChatResult(rec["text"], dict(rec.get("usage") or {}), 0.0, self.model, True))
        r = self._raw(messages, images, json_mode, temperature, max_tokens)
        if key is not None and self.cache is not None:
            self.cache.put(key, r.text, r.usage, self.model)
        return self._account(r)

    def chat_json(self, messages: Sequence[Mapping[str, Any]], validate: Callable[[Any], T], images: Sequence = (),
                  json_mode: bool = True, temperature: float | None = None, max_tokens: int | None = None,
                  format_retries: int = 2, use_cache: bool = True) -> tuple[T, ChatResult]:
        """Ask for JSON; ``validate(value)`` returns the checked result or raises ValueError.

        A reply that is not JSON or fails ``validate`` is re-asked (the model sees its reply
        and the error) up to ``format_retries`` times, then :class:`MalformedReply` is
        raised. Only a validated reply is cached, under the original request's key. The
        returned ChatResult sums usage and cost over all attempts.
        """
        msgs = _check_messages(messages)
        key = None
        if use_cache and self.cache is not None:
            key = self._key_for(msgs, images, json_mode, temperature, max_tokens, protocol="json")
            rec = self.cache.get(key)
            if rec is not None:
                try:
                    value = validate(extract_json(rec["text"]))
                    return value, self._account(ChatResult(rec["text"], dict(rec.get("usage") or {}), 0.0,
                                                           self.model, True))
                except (ValueError, TypeError, KeyError, RecursionError):
                    log.warning("cached reply no longer validates; asking again")
        conv = list(msgs)
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        cost, attempts, err, r = 0.0, 0, "", None
        for i in range(format_retries + 1):
            r = self._raw(conv, images, json_mode, temperature, max_tokens)
            usage = {k: usage[k] + r.usage.get(k, 0) for k in usage}
            cost += r.cost
            attempts += r.attempts
            try:
                value = validate(extract_json(r.text))
            except (ValueError, TypeError, KeyError, RecursionError) as e:
                err = str(e)[:300] or type(e).__name__
                log.warning("malformed reply from %s (%s); %s", self.model, err,
                            "asking again" if i < format_retries else "giving up")
                conv = conv + [{"role": "assistant", "content": r.text},
                               {"role": "user", "content": f"That reply was not valid: {err}. Answer again with "
                                                           "only the JSON object, exactly in the requested format."}]
                continue
            res = ChatResult(r.text, usage, cost, self.model, False, attempts, r.finish_reason)
            if key is not None and self.cache is not None:
                self.cache.put(key, r.text, usage, self.model)
            return value, self._account(res)
        self._account(ChatResult(r.text if r else "", usage, cost, self.model, False, attempts))
        raise MalformedReply(f"{self.model} gave no valid JSON after {format_retries + 1} tries: {err}",
                             r.text if r else "")


class _Transient(Exception):
    pass


def _parse_completion(resp) -> tuple[str, dict, str | None]:
    """(text, usage, finish_reason) of a chat completion; _Transient when it is malformed."""
    choices = getattr(resp, "choices", None)
    if not choices or not isinstance(choices, list):
        raise _Transient("reply without choices")
    ch = choices[0]
    msg = getattr(ch, "message", None)
    if msg is None:
        raise _Transient("reply without a message")
    text = getattr(msg, "content", None)
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise _Transient(f"message content is a {type(text).__name__}, not text")
    u = getattr(resp, "usage", None)
    usage = {}
    for k in ("prompt_tokens", "completion_tokens"):
        v = getattr(u, k, 0) or 0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise _Transient(f"usage.{k} is not a count: {str(v)[:40]!r}")
        usage[k] = int(v)
    finish = getattr(ch, "finish_reason", None)
    return text, usage, finish if isinstance(finish, str) else None
