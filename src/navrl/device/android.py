"""Android devices and emulators over adb (``adbutils``; ``pip install 'navrl[android]'``).

- actions: ``input tap`` / ``input swipe`` (long press = a swipe that stays put for the
  duration) / ``input keyevent KEYCODE_HOME``;
- text: never through the shell unquoted. The default sends it with the ADBKeyBoard IME
  broadcast (``am broadcast -a ADB_INPUT_B64 --es msg <base64 of UTF-8>``): any Unicode,
  and the shell only ever sees base64. ``text_input="input"`` uses ``input text`` with
  strict single-quote quoting and Android's ``%s`` escape handled (printable ASCII only);
- observation: ``screencap -p`` (PNG, physical pixels) and the UI tree of
  ``uiautomator dump`` (same pixel space, so no conversion);
- rollback: emulator snapshots (``adb emu avd snapshot save/load``), per-app data
  archives (root: ``tar`` of ``/data/data/<pkg>``), or ``pm clear`` (fresh-install state);
- every adb round trip runs under ``timeout_s``; failures raise :class:`DeviceError`
  (``timeout``, ``device_offline``, ``adb_error`` …), which the pool retries once after a
  reconnect.

Only 127.0.0.1 by default: the adb server address comes from :class:`AndroidConfig`.
Set-up steps for an emulator farm: ``docs/devices.md``.
"""
from __future__ import annotations

import base64
import re
import shlex
import struct
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from navrl.actions import Action, ActionKind
from navrl.device.backend import DeviceTimeout
from navrl.device.base import ActResult, DeviceError, Health
from navrl.device.mobile import MobileBackend, MobileDevice, import_client
from navrl.observation import Observation, UINode

__all__ = [
    "AndroidBackend", "AndroidConfig", "AndroidDevice", "AndroidSnapshot", "TextUnsupported", "decode_input_text",
    "emu_snapshot_args", "ime_text_args", "input_text_args", "parse_uiautomator", "shell_join", "swipe_endpoints",
]

IME_ACTION = "ADB_INPUT_B64"
"""Broadcast action of ADBKeyBoard (com.android.adbkeyboard/.AdbIME): base64 UTF-8 text."""
_PKG_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class TextUnsupported(DeviceError):
    """Text the configured input method cannot deliver literally (reason ``text_unsupported``)."""

    def __init__(self, message: str = "") -> None:
        super().__init__("text_unsupported", message)


# ---------------------------------------------------------------------------------- command construction
def shell_join(args: Sequence[str]) -> str:
    """One device-shell command line in which every argument arrives literally.

    Each argument is single-quoted (POSIX ``sh``/``mksh`` rules: nothing is special
    inside single quotes; a quote itself becomes ``'"'"'``). NUL cannot be passed."""
    for a in args:
        if "\x00" in a:
            raise TextUnsupported("a shell argument cannot contain NUL")
    return " ".join(shlex.quote(a) for a in args)


def ime_text_args(text: str) -> list[str]:
    """``am broadcast`` for ADBKeyBoard: the text travels as base64 of its UTF-8 bytes."""
    if not text:
        raise TextUnsupported("nothing to type")
    return ["am", "broadcast", "-a", IME_ACTION, "--es", "msg", base64.b64encode(text.encode("utf-8")).decode("ascii")]


def _printable_ascii(text: str) -> bool:
    return all(" " <= c <= "~" for c in text)


def input_text_chunks(text: str) -> list[str]:
    """Split ``text`` into ``input text`` arguments that Android decodes back to it.

    ``input text`` turns ``%s`` into a space (and nothing else). So a space is sent as
    ``%s``, and a literal ``%`` followed by a literal ``s`` is cut between two commands so
    the pair is never read as an escape. Only printable ASCII is deliverable this way."""
    if not text:
        raise TextUnsupported("nothing to type")
    if not _printable_ascii(text):
        raise TextUnsupported("input text delivers printable ASCII only; use the IME (text_input='ime')")
    chunks, cur = [], ""
    for i, c in enumerate(text):
        if c == "s" and i > 0 and text[i - 1] == "%":
            chunks.append(cur)
            cur = ""
        cur += "%s" if c == " " else c
    chunks.append(cur)
    return chunks


def input_text_args(text: str) -> list[list[str]]:
    """The ``input text`` commands (one per chunk) that type ``text``."""
    return [["input", "text", c] for c in input_text_chunks(text)]


def decode_input_text(arg: str) -> str:
    """What Android's ``input text`` types for one argument (its ``%s`` handling, as in
    ``InputShellCommand.sendText``): a model of the device side, used by the tests."""
    buf = list(arg)
    i, esc = 0, False
    while i < len(buf):
        if esc:
            esc = False
            if buf[i] == "s":
                buf[i] = " "
                del buf[i - 1]
                i -= 1
        if buf[i] == "%":
            esc = True
        i += 1
    return "".join(buf)


def swipe_endpoints(a: Action, size: tuple[int, int], fraction: float = 0.4) -> tuple[int, int, int, int]:
    """(x1, y1, x2, y2) of a swipe: explicit end points, or ``fraction`` of the screen in
    the finger's direction from the given start (default: the centre), kept on screen."""
    w, h = size
    if a.x2 is not None and a.y2 is not None and a.x is not None and a.y is not None:
        return a.x, a.y, a.x2, a.y2
    sx = a.x if a.x is not None else w // 2
    sy = a.y if a.y is not None else h // 2
    dx = {"left": -1, "right": 1}.get(a.direction or "", 0) * int(w * fraction)
    dy = {"up": -1, "down": 1}.get(a.direction or "", 0) * int(h * fraction)
    return sx, sy, min(max(sx + dx, 1), w - 2), min(max(sy + dy, 1), h - 2)


def device_commands(a: Action, size: tuple[int, int], text_input: str = "ime", swipe_ms: int = 300) -> list[list[str]]:
    """The shell commands (argument lists) that perform a device action on Android."""
    k = a.kind
    if k is ActionKind.TAP:
        return [["input", "tap", str(a.x), str(a.y)]]
    if k is ActionKind.LONG_PRESS:
        ms = str(max(1, int(round(a.duration * 1000))))
        return [["input", "swipe", str(a.x), str(a.y), str(a.x), str(a.y), ms]]
    if k is ActionKind.SWIPE:
        x1, y1, x2, y2 = swipe_endpoints(a, size)
        return [["input", "swipe", str(x1), str(y1), str(x2), str(y2), str(swipe_ms)]]
    if k is ActionKind.HOME:
        return [["input", "keyevent", "KEYCODE_HOME"]]
    if k is ActionKind.TYPE:
        if text_input == "ime":
            return [ime_text_args(a.text or "")]
        if text_input == "input":
            return input_text_args(a.text or "")
        raise ValueError(f"unknown text_input {text_input!r}; choose 'ime' or 'input'")
    raise ValueError(f"{k.value} is not a device action")


def emu_snapshot_args(adb: str, serial: str, op: str, name: str, host: str = "127.0.0.1",
                      port: int = 5037) -> list[str]:
    """``adb emu avd snapshot save|load NAME`` for one emulator (run without a shell)."""
    if op not in ("save", "load", "delete"):
        raise ValueError(f"snapshot op must be save, load or delete, got {op!r}")
    if not _NAME_RE.match(name):
        raise ValueError(f"bad snapshot name {name!r}: letters, digits, '.', '_' and '-' only")
    return [adb, "-H", host, "-P", str(port), "-s", serial, "emu", "avd", "snapshot", op, name]


def _check_pkg(pkg: str) -> str:
    if not _PKG_RE.match(pkg):
        raise ValueError(f"bad package name {pkg!r}")
    return pkg


def app_data_save_cmd(pkg: str, tag: str) -> str:
    """Root shell line archiving one app's private data under ``tag``."""
    _check_pkg(pkg)
    if not _NAME_RE.match(tag):
        raise ValueError(f"bad snapshot tag {tag!r}")
    d = f"/data/local/tmp/navrl/{tag}"
    return " && ".join(shell_join(c) for c in (
        ["am", "force-stop", pkg], ["mkdir", "-p", d], ["tar", "-cf", f"{d}/{pkg}.tar", "-C", "/data/data", pkg]))


def app_data_load_cmd(pkg: str, tag: str) -> str:
    """Root shell line putting an archived app-data directory back (owner and SELinux
    labels restored from the live directory)."""
    _check_pkg(pkg)
    if not _NAME_RE.match(tag):
        raise ValueError(f"bad snapshot tag {tag!r}")
    a = f"/data/local/tmp/navrl/{tag}/{pkg}.tar"
    live = f"/data/data/{pkg}"
    owner = f"$(stat -c %u:%g {shlex.quote(live)})"   # a fixed template over a validated name
    return " && ".join([
        shell_join(["am", "force-stop", pkg]), f"o={owner}", shell_join(["rm", "-rf", live]),
        shell_join(["tar", "-xf", a, "-C", "/data/data"]), f"chown -R \"$o\" {shlex.quote(live)}",
        shell_join(["restorecon", "-R", live])])


# ---------------------------------------------------------------------------------- UI tree
_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
_ROLES = {
    "Button": "button", "ImageButton": "button", "MaterialButton": "button", "FloatingActionButton": "button",
    "EditText": "textfield", "AutoCompleteTextView": "textfield", "TextInputEditText": "textfield",
    "SearchAutoComplete": "textfield", "TextView": "text", "CheckedTextView": "text", "ImageView": "image",
    "CheckBox": "checkbox", "Switch": "switch", "SwitchCompat": "switch", "SwitchMaterial": "switch",
    "ToggleButton": "switch", "RadioButton": "radio", "SeekBar": "slider", "ProgressBar": "progress",
    "RecyclerView": "list", "ListView": "list", "ScrollView": "list", "HorizontalScrollView": "list",
    "ViewPager": "list", "WebView": "web", "Spinner": "button", "TabWidget": "tablist",
}


_HEADER_IDS = ("toolbar", "action_bar_title", "homepage_title", "conversation_title", "collapsing_title",
               "large_title", "alertTitle")


def _android_role(cls: str, clickable: bool, resource_id: str) -> str:
    simple = cls.rsplit(".", 1)[-1]
    role = _ROLES.get(simple)
    if role is None and simple.endswith("TextView"):
        role = "text"
    if role is None and simple.endswith("Button"):
        role = "button"
    if role == "image" and clickable:
        role = "button"
    entry = resource_id.rsplit("/", 1)[-1]
    if role is None and "tab" in entry.lower() and clickable:
        role = "tab"
    if role == "text" and not clickable and any(h in entry for h in _HEADER_IDS):
        role = "header"
    return role or ("button" if clickable else "group")


def _first_text(el: ET.Element) -> str:
    """The first visible text (or content description) below ``el``, depth first."""
    for d in el.iter("node"):
        if d is el or d.get("visible-to-user") == "false":
            continue
        t = d.get("text") or d.get("content-desc")
        if t:
            return t
    return ""


def parse_uiautomator(xml: str | bytes) -> tuple[tuple[UINode, ...], str | None]:
    """UI nodes of a ``uiautomator dump`` (document order) and the foreground package.

    Kept: nodes that have a label (text, else content-desc) or react to something
    (clickable → tap, long-clickable → long_press, scrollable → swipe), with a non-empty
    on-screen box and not marked invisible. A clickable row without a label of its own
    takes its first descendant's text (as TalkBack reads it), so a label match lands on
    the element that reacts. A field's label is its hint, its value the typed text;
    switches and check boxes read ``on``/``off``."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise DeviceError("ui_dump_failed", f"uiautomator XML does not parse: {e}") from None
    nodes: list[UINode] = []
    package: str | None = None
    for i, n in enumerate(root.iter("node")):
        a = n.attrib
        if package is None and a.get("package"):
            package = a["package"]
        if a.get("visible-to-user") == "false":
            continue
        m = _BOUNDS.fullmatch(a.get("bounds", ""))
        if not m:
            continue
        x0, y0, x1, y1 = (int(v) for v in m.groups())
        if x1 <= x0 or y1 <= y0:
            continue
        flag = lambda k: a.get(k) == "true"    # noqa: E731
        acts = tuple(name for name, k in (("tap", "clickable"), ("long_press", "long-clickable"),
                                         ("swipe", "scrollable")) if flag(k))
        text, desc, rid = a.get("text", ""), a.get("content-desc", ""), a.get("resource-id", "")
        role = _android_role(a.get("class", ""), flag("clickable"), rid)
        if role == "textfield" and not acts:
            acts = ("tap",)
        label = text or desc
        if role == "textfield":
            label = a.get("hint") or desc or ("" if text else "")
        elif not label and ("tap" in acts or "long_press" in acts):
            label = _first_text(n)
        if not label and not acts:
            continue
        value = None
        if role == "textfield":
            value = text if text and text != a.get("hint") else None
        elif role in ("switch", "checkbox", "radio") and flag("checkable"):
            value = "on" if flag("checked") else "off"
        nodes.append(UINode(id=rid or f"node{i}", role=role, label=label, bounds=(x0, y0, x1, y1),
                            enabled=a.get("enabled", "true") == "true", focused=flag("focused"), value=value,
                            description=desc if desc != label else "", actions=acts))
    return tuple(nodes), package


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, without decoding the image."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n":
        raise DeviceError("screenshot_failed", "screencap did not return a PNG")
    return struct.unpack(">II", png[16:24])


# ---------------------------------------------------------------------------------- snapshots
@dataclass(frozen=True)
class AndroidSnapshot:
    """A rollback point: ``emulator`` (AVD snapshot ``name``), ``app_data`` (root archive
    ``name`` of ``packages``' data) or ``clear`` (``pm clear`` of ``packages``)."""

    kind: str
    name: str = ""
    packages: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("emulator", "app_data", "clear"):
            raise ValueError(f"unknown Android snapshot kind {self.kind!r}")
        if self.kind != "clear" and not _NAME_RE.match(self.name):
            raise ValueError(f"bad snapshot name {self.name!r}")
        for p in self.packages:
            _check_pkg(p)


# ---------------------------------------------------------------------------------- the device
@dataclass(frozen=True)
class AndroidConfig:
    """How to reach and drive one Android device."""

    serial: str = ""
    """adb serial (``emulator-5554``, ``127.0.0.1:5555`` …)."""
    adb_host: str = "127.0.0.1"
    """Where the adb server listens."""
    adb_port: int = 5037
    timeout_s: float = 20.0
    """Deadline of each adb round trip (connect, command, read)."""
    snapshot_timeout_s: float = 120.0
    """Deadline of an emulator snapshot save or load (and of the boot wait after a load)."""
    text_input: str = "ime"
    """``ime`` (ADBKeyBoard broadcast, any Unicode) or ``input`` (``input text``, printable ASCII)."""
    snapshot_mode: str = "emulator"
    """What :meth:`AndroidDevice.snapshot` makes: ``emulator`` or ``app_data`` (needs root)."""
    packages: tuple[str, ...] = ()
    """Apps whose data ``app_data`` snapshots archive."""
    swipe_ms: int = 300
    settle_s: float = 0.4
    """Pause after an action before the next observation (animations)."""
    dump_path: str = "/sdcard/navrl_ui.xml"
    adb_path: str | None = None
    """adb binary for ``emu`` commands (default: adbutils' lookup)."""


class AndroidDevice(MobileDevice):
    """One Android device or emulator behind an adb server."""

    platform = "android"

    def __init__(self, config: AndroidConfig, on_close: Callable[[], None] | None = None):
        (adbutils,) = import_client("adbutils", missing="Android needs adbutils: pip install 'navrl[android]'")
        if not config.serial:
            raise ValueError("AndroidConfig.serial is required")
        if config.text_input not in ("ime", "input"):
            raise ValueError(f"text_input must be 'ime' or 'input', got {config.text_input!r}")
        super().__init__(config, on_close)
        self._adbutils = adbutils
        self._client = adbutils.AdbClient(host=config.adb_host, port=config.adb_port, socket_timeout=config.timeout_s)
        self._dev = self._client.device(serial=config.serial)
        self._size: tuple[int, int] | None = None

    # -- transport ----------------------------------------------------------------------
    def shell(self, cmd: str, timeout: float | None = None) -> bytes:
        """Run one shell command line (already quoted) and return its raw output."""
        if self._closed:
            raise DeviceError("device_closed", self.cfg.serial)
        t = timeout or self.cfg.timeout_s
        errs = self._adbutils.errors
        c = None
        try:
            c = self._dev.open_transport(timeout=t)
            c.send_command("shell:" + cmd)
            c.check_okay()
            c.conn.settimeout(t)
            return c.read_until_close(encoding=None)
        except errs.AdbTimeout as e:
            raise DeviceTimeout(f"{self.cfg.serial}: adb did not answer within {t:g} s ({e})") from None
        except errs.AdbError as e:
            msg = str(e)
            reason = "device_offline" if ("not found" in msg or "offline" in msg) else "adb_error"
            raise DeviceError(reason, f"{self.cfg.serial}: {msg}") from None
        except TimeoutError as e:
            raise DeviceTimeout(f"{self.cfg.serial}: {e}") from None
        except (OSError, EOFError) as e:
            raise DeviceError("connection", f"{self.cfg.serial}: {type(e).__name__}: {e}") from None
        finally:
            if c is not None:
                try:
                    c.close()
                except Exception:  # noqa: BLE001 - closing a broken socket
                    pass

    def run(self, args: Sequence[str], timeout: float | None = None) -> str:
        """Run one command given as arguments (each quoted); return its text output."""
        return self.shell(shell_join(args), timeout).decode("utf-8", "replace")

    def emu(self, op: str, name: str) -> str:
        """``adb emu avd snapshot op name`` through the adb binary (no shell involved)."""
        adb = self.cfg.adb_path or self._adbutils.adb_path()
        args = emu_snapshot_args(adb, self.cfg.serial, op, name, self.cfg.adb_host, self.cfg.adb_port)
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=self.cfg.snapshot_timeout_s)
        except subprocess.TimeoutExpired:
            raise DeviceTimeout(f"{self.cfg.serial}: snapshot {op} {name} took over "
                                f"{self.cfg.snapshot_timeout_s:g} s") from None
        except OSError as e:
            raise DeviceError("adb_error", f"cannot run adb: {e}") from None
        out = (p.stdout + p.stderr).strip()
        if p.returncode != 0 or "KO" in out.split():
            raise DeviceError("snapshot_failed", f"{self.cfg.serial}: snapshot {op} {name}: {out[:200]}")
        return out

    # -- Device protocol ------------------------------------------------------------------
    def observe(self) -> Observation:
        png = self.shell("screencap -p")
        self._size = png_size(png)
        dump = self.shell(f"uiautomator dump {shlex.quote(self.cfg.dump_path)} >/dev/null && "
                          f"cat {shlex.quote(self.cfg.dump_path)}")
        start = dump.find(b"<?xml")
        if start < 0:
            start = dump.find(b"<hierarchy")
        if start < 0:
            raise DeviceError("ui_dump_failed", f"{self.cfg.serial}: {dump[:120]!r}")
        nodes, package = parse_uiautomator(dump[start:])
        return Observation(nodes, package, self._size, "android", _png=png)

    def screen_size(self) -> tuple[int, int]:
        if self._size is None:
            out = self.run(["wm", "size"])
            m = re.findall(r"(\d+)x(\d+)", out)
            if not m:
                raise DeviceError("adb_error", f"wm size said {out!r}")
            self._size = (int(m[-1][0]), int(m[-1][1]))   # the override size if set, else physical
        return self._size

    def act(self, action: Action) -> ActResult:
        size = self.screen_size()
        action.validate(size)
        if not action.is_device_action:
            raise ValueError(f"{action.kind.value} is an episode action, not a device action")
        for args in device_commands(action, size, self.cfg.text_input, self.cfg.swipe_ms):
            self.run(args)
        if self.cfg.settle_s:
            time.sleep(self.cfg.settle_s)
        return ActResult(True, "sent")   # a real device does not say whether the screen changed

    def snapshot(self) -> AndroidSnapshot:
        name = f"navrl-{uuid.uuid4().hex[:12]}"
        if self.cfg.snapshot_mode == "emulator":
            self.emu("save", name)
            return AndroidSnapshot("emulator", name)
        if self.cfg.snapshot_mode == "app_data":
            if not self.cfg.packages:
                raise ValueError("app_data snapshots need AndroidConfig.packages")
            for p in self.cfg.packages:
                self.shell(app_data_save_cmd(p, name), self.cfg.snapshot_timeout_s)
            return AndroidSnapshot("app_data", name, self.cfg.packages)
        raise ValueError(f"unknown snapshot_mode {self.cfg.snapshot_mode!r}")

    def restore(self, snapshot: object) -> None:
        if not isinstance(snapshot, AndroidSnapshot):
            raise TypeError("AndroidDevice.restore needs an AndroidSnapshot")
        if snapshot.kind == "emulator":
            self.emu("load", snapshot.name)
            self._wait_booted()
        elif snapshot.kind == "app_data":
            for p in snapshot.packages:
                self.shell(app_data_load_cmd(p, snapshot.name), self.cfg.snapshot_timeout_s)
        else:
            for p in snapshot.packages:
                self.run(["pm", "clear", p], self.cfg.snapshot_timeout_s)
        self.run(["input", "keyevent", "KEYCODE_HOME"])
        self._size = None

    def _wait_booted(self) -> None:
        deadline = time.monotonic() + self.cfg.snapshot_timeout_s
        while True:
            try:
                if self.run(["getprop", "sys.boot_completed"]).strip() == "1":
                    return
            except DeviceError:
                pass
            if time.monotonic() > deadline:
                raise DeviceTimeout(f"{self.cfg.serial} did not come back within {self.cfg.snapshot_timeout_s:g} s")
            time.sleep(0.5)

    def ping(self) -> None:
        self.run(["echo", "ok"])        # answers under the adb deadline

    def health(self) -> Health:
        boot = self.run(["getprop", "sys.boot_completed"]).strip()
        if boot != "1":
            return Health(False, f"not booted (sys.boot_completed={boot!r})")
        power = self.run(["dumpsys", "power"])
        if not ("mWakefulness=Awake" in power or "Display Power: state=ON" in power):
            return Health(False, "screen off", {"serial": self.cfg.serial})
        if self.cfg.text_input == "ime":
            ime = self.run(["settings", "get", "secure", "default_input_method"]).strip()
            if "adbkeyboard" not in ime.lower():
                return Health(False, f"ADBKeyBoard is not the active IME ({ime!r}); see docs/devices.md")
        return Health(True, "ok", {"serial": self.cfg.serial})


# ---------------------------------------------------------------------------------- pool backend
@dataclass
class AndroidBackend(MobileBackend, device_type=AndroidDevice, addresses_field="serials", address_setting="serial",
                     address_kind="Android serials"):
    """A pool backend over a list of adb serials (an emulator farm on one host).

    ``snapshot_for(task)`` names the rollback point of a task; the default is the AVD
    snapshot ``base_snapshot`` (prepared once per emulator: docs/devices.md). A device is
    given to at most one pool slot; a replacement takes the next free serial."""

    serials: Sequence[str] = ()
    config: AndroidConfig = field(default_factory=AndroidConfig)
    base_snapshot: str = "navrl-base"
    snapshot_for: Callable[[Any], AndroidSnapshot] | None = None
    name: str = "android"
    in_process: bool = False

    def default_snapshot(self) -> AndroidSnapshot:
        return AndroidSnapshot("emulator", self.base_snapshot)
