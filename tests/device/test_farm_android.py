"""Android backend without hardware: command construction and quoting of hostile text
(property-based, parsed by a real POSIX shell), uiautomator parsing of committed samples,
and the whole device against a fake adb server on 127.0.0.1 — including one that stops
answering."""
from __future__ import annotations

import base64
import io
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from navrl.actions import Action
from navrl.device.android import (AndroidBackend, AndroidConfig, AndroidDevice, AndroidSnapshot, TextUnsupported,
                                  app_data_load_cmd, app_data_save_cmd, decode_input_text, device_commands,
                                  emu_snapshot_args, ime_text_args, input_text_args, input_text_chunks,
                                  parse_uiautomator, shell_join, swipe_endpoints)
from navrl.device.base import DeviceError
from navrl.device.pool import DevicePool, DeviceTimeout, PoolConfig

pytest.importorskip("adbutils")

FIX = Path(__file__).parent / "fixtures"
HOSTILE = ["'; rm -rf / #", "a && reboot", "$(reboot)", "`id`", '"double" \'single\'', "it's", "%s", "100% sure",
           "a%sb", "%%s", "50%", "naïve 日本語 😀", "line1\nline2", "tab\there", "back\\slash", "*", "~", "$HOME",
           "--es msg x", "-a", " leading and trailing ", "|cat /etc/passwd", "a;b", "{x,y}", "!!", "\\'",
           "sale 50%", "s%"]   # starts with s, ends with %: no %s across the wrap-around


def sh_parse(line: str) -> list[str]:
    """How a POSIX device shell splits ``line`` into arguments (run by /bin/sh here)."""
    script = "set -- " + line + '\nfor a in "$@"; do printf "%s\\0" "$a"; done'
    out = subprocess.run(["sh", "-c", script], capture_output=True, timeout=10, check=True).stdout
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0")[:-1]]


# ------------------------------------------------------------------ quoting (property-based)
@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_ime_broadcast_delivers_any_text_literally(text):
    args = ime_text_args(text)
    line = shell_join(args)
    assert sh_parse(line) == args                                   # every argument arrives as built
    assert set(args[-1]) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
    assert base64.b64decode(args[-1]).decode("utf-8") == text       # and the IME types exactly the text


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), min_size=1, max_size=60))
def test_input_text_chunks_decode_to_the_text(text):
    cmds = input_text_args(text)
    assert "".join(decode_input_text(c[2]) for c in cmds) == text   # Android's %s handling undone
    for c in cmds:
        assert sh_parse(shell_join(c)) == c


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_strings_arrive_literally(text):
    assert base64.b64decode(sh_parse(shell_join(ime_text_args(text)))[-1]).decode() == text
    if all(" " <= ch <= "~" for ch in text):
        got = "".join(decode_input_text(sh_parse(shell_join(c))[2]) for c in input_text_args(text))
        assert got == text
        assert all(c[2] for c in input_text_args(text))          # no empty `input text ''` commands
    else:
        with pytest.raises(TextUnsupported):
            input_text_args(text)


class _RecordingDevice(AndroidDevice):
    """An AndroidDevice whose transport records the shell lines instead of sending them."""

    def __init__(self, **cfg):
        super().__init__(AndroidConfig(serial="emulator-5554", settle_s=0.0, **cfg))
        self.lines: list[str] = []

    def shell(self, cmd: str, timeout: float | None = None) -> bytes:
        self.lines.append(cmd)
        return b"Physical size: 1080x2400\n" if cmd.startswith("wm size") else b""


@pytest.mark.parametrize("text_input", ["ime", "input"])
def test_typed_text_reaches_the_device_shell_literally(text_input):
    """The whole path, AndroidDevice.act -> run -> shell: every argument of every command line
    arrives as built (a device shell parses what run() sends), and the text typed is exactly
    the text asked for. Catches run() joining arguments without quoting."""
    dev = _RecordingDevice(text_input=text_input)
    checked = 0
    for text in HOSTILE:
        if text_input == "input" and not all(" " <= ch <= "~" for ch in text):
            continue
        dev.lines.clear()
        dev.act(Action.type(text))
        sent = [ln for ln in dev.lines if not ln.startswith("wm size")]
        assert sent, text
        argv = [sh_parse(ln) for ln in sent]
        if text_input == "ime":
            assert argv == [ime_text_args(text)]
            assert base64.b64decode(argv[0][-1]).decode() == text
        else:
            assert argv == input_text_args(text)
            assert "".join(decode_input_text(a[2]) for a in argv) == text
        checked += 1
    assert checked >= 20


def test_run_quotes_every_argument():
    dev = _RecordingDevice()
    args = ["am", "broadcast", "-a", "x; reboot", "$(id)", "it's"]
    dev.run(args)
    assert sh_parse(dev.lines[-1]) == args


def test_percent_s_is_split_so_android_cannot_read_it_as_a_space():
    assert input_text_chunks("a%sb") == ["a%", "sb"]
    assert input_text_chunks("50% off") == ["50%%soff"]          # '%' then the encoded space
    assert decode_input_text("50%%soff") == "50% off"
    assert input_text_chunks("hello world") == ["hello%sworld"]


def test_nul_and_empty_text_are_refused():
    with pytest.raises(TextUnsupported):
        shell_join(["input", "text", "a\x00b"])
    with pytest.raises(TextUnsupported):
        ime_text_args("")


# ------------------------------------------------------------------ other commands
def test_action_commands():
    size = (1080, 2400)
    line = lambda a, **kw: [shell_join(c) for c in device_commands(a, size, **kw)]  # noqa: E731
    assert line(Action.tap(540, 825)) == ["input tap 540 825"]
    assert line(Action.long_press(540, 825, 1.5)) == ["input swipe 540 825 540 825 1500"]
    assert line(Action.swipe("up")) == ["input swipe 540 1200 540 240 300"]
    assert line(Action.swipe("left", 900, 1000)) == ["input swipe 900 1000 468 1000 300"]
    assert line(Action.swipe(None, 10, 2000, 10, 100)) == ["input swipe 10 2000 10 100 300"]
    assert line(Action.home()) == ["input keyevent KEYCODE_HOME"]
    assert line(Action.type("it's"), text_input="input") == ["input text 'it'\"'\"'s'"]
    assert swipe_endpoints(Action.swipe("down", 540, 2300), size) == (540, 2300, 540, 2398)   # kept on screen


def test_snapshot_commands_validate_names():
    assert emu_snapshot_args("adb", "emulator-5554", "load", "navrl-base") == [
        "adb", "-H", "127.0.0.1", "-P", "5037", "-s", "emulator-5554", "emu", "avd", "snapshot", "load", "navrl-base"]
    for bad in ("a b", "x;reboot", "../up", "", "$(id)"):
        with pytest.raises(ValueError):
            emu_snapshot_args("adb", "emulator-5554", "save", bad)
    with pytest.raises(ValueError):
        app_data_save_cmd("com.x; reboot", "t1")
    with pytest.raises(ValueError):
        AndroidSnapshot("app_data", "t1", ("com.evil && reboot",))
    save = app_data_save_cmd("com.example.notes", "navrl-1")
    assert sh_parse(save.split(" && ")[2]) == ["tar", "-cf", "/data/local/tmp/navrl/navrl-1/com.example.notes.tar",
                                              "-C", "/data/data", "com.example.notes"]
    assert "restorecon -R /data/data/com.example.notes" in app_data_load_cmd("com.example.notes", "navrl-1")


# ------------------------------------------------------------------ uiautomator samples
def test_parse_settings_dump():
    nodes, pkg = parse_uiautomator((FIX / "uiautomator_settings.xml").read_bytes())
    assert pkg == "com.android.settings" and len(nodes) == 27
    by = {}
    for n in nodes:
        by.setdefault(n.label, []).append(n)
    row = [n for n in by["Network & internet"] if n.actions][0]          # the clickable row took its title
    assert row.role == "button" and row.bounds == (0, 711, 1080, 940) and row.center == (540, 825)
    assert by["Settings"][0].role == "header" and by["Settings"][0].bounds == (63, 304, 1017, 438)
    assert sum(n.role == "list" and n.actions == ("swipe",) for n in nodes) == 2
    assert sum(n.role == "button" for n in nodes) == 8 and sum(n.role == "text" for n in nodes) == 16
    assert by["32% used - 43.52 GB free"][0].bounds == (231, 1975, 721, 2033)


def test_parse_compose_dump_with_field_switch_and_hidden_nodes():
    nodes, pkg = parse_uiautomator((FIX / "uiautomator_messages_compose.xml").read_bytes())
    assert pkg == "com.google.android.apps.messaging" and len(nodes) == 11
    field = [n for n in nodes if n.role == "textfield"]
    assert len(field) == 1 and field[0].label == "Text message" and field[0].value == "rm -rf / ; echo 'hi'"
    assert field[0].focused and field[0].bounds == (168, 2073, 870, 2184)
    sw = [n for n in nodes if n.role == "switch"][0]
    assert sw.label == "Send read receipts" and sw.value == "on"
    send = [n for n in nodes if n.label == "Send SMS"][0]
    assert not send.enabled and send.role == "button"
    assert [n.label for n in nodes if n.role == "header"] == ['Zoë "Z" O\'Brien']
    assert "Older message scrolled away" not in {n.label for n in nodes}        # visible-to-user="false"
    msg = [n for n in nodes if n.label.startswith("Meet at 7")][0]
    assert msg.label == "Meet at 7? Bring $(cash) & 50% off coupon 😀" and msg.actions == ("tap", "long_press")


def test_broken_dump_is_a_device_error():
    with pytest.raises(DeviceError) as e:
        parse_uiautomator(b"<hierarchy><node")
    assert e.value.reason == "ui_dump_failed"


# ------------------------------------------------------------------ a fake adb server
def _png(w: int, h: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (30, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


class FakeAdb:
    """Speaks the adb server's smart-socket protocol on 127.0.0.1 for ``serials`` (default
    one, :attr:`SERIAL`), all showing the same screen.

    ``hang``: accept connections but never answer (a server/device that stopped)."""

    SERIAL = "emulator-5554"

    def __init__(self, dump: bytes, ime: str = "com.android.adbkeyboard/.AdbIME", serials: tuple[str, ...] = ()):
        self.serials = set(serials or (self.SERIAL,))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.commands: list[str] = []
        self.hang = False
        self.png = _png(1080, 2400)
        self.outputs = {"getprop sys.boot_completed": b"1\n", "dumpsys power": b"  mWakefulness=Awake\n",
                        "settings get secure default_input_method": ime.encode() + b"\n",
                        "wm size": b"Physical size: 1080x2400\n", "screencap -p": self.png, "echo ok": b"ok\n"}
        self.dump = dump
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._conn, args=(c,), daemon=True).start()

    @staticmethod
    def _read(c: socket.socket) -> str | None:
        n = b""
        while len(n) < 4:
            chunk = c.recv(4 - len(n))
            if not chunk:
                return None
            n += chunk
        size, data = int(n, 16), b""
        while len(data) < size:
            data += c.recv(size - len(data))
        return data.decode()

    def _conn(self, c: socket.socket) -> None:
        try:
            if self.hang:
                time.sleep(5)
                return
            while True:
                cmd = self._read(c)
                if cmd is None:
                    return
                if cmd == "host:version":
                    c.sendall(b"OKAY00040029")
                    return
                if cmd.startswith("host:tport:serial:"):
                    if cmd.split(":", 3)[3] not in self.serials:
                        msg = b"device not found"
                        c.sendall(b"FAIL" + b"%04x" % len(msg) + msg)
                        return
                    c.sendall(b"OKAY" + b"\x01" + b"\0" * 7)
                    continue
                if cmd.startswith("shell:"):
                    line = cmd[len("shell:"):]
                    self.commands.append(line)
                    c.sendall(b"OKAY" + self._output(line))
                    return
                c.sendall(b"FAIL0007unknown")
                return
        finally:
            c.close()

    def _output(self, line: str) -> bytes:
        if line.startswith("uiautomator dump"):
            return self.dump
        return self.outputs.get(line, b"")

    def close(self) -> None:
        self._stop = True
        self.sock.close()


@pytest.fixture
def adb():
    srv = FakeAdb((FIX / "uiautomator_settings.xml").read_bytes())
    yield srv
    srv.close()


def _device(srv: FakeAdb, **kw) -> AndroidDevice:
    cfg = dict(serial=FakeAdb.SERIAL, adb_port=srv.port, timeout_s=0.4, settle_s=0.0)
    cfg.update(kw)
    return AndroidDevice(AndroidConfig(**cfg))


def test_device_observes_acts_and_probes_over_adb(adb):
    d = _device(adb)
    obs = d.observe()
    assert obs.screen_size == (1080, 2400) and obs.app == "com.android.settings" and obs.png == adb.png
    assert obs.nodes == parse_uiautomator((FIX / "uiautomator_settings.xml").read_bytes())[0]
    assert adb.commands[:2] == ["screencap -p", "uiautomator dump /sdcard/navrl_ui.xml >/dev/null && "
                                                "cat /sdcard/navrl_ui.xml"]
    adb.commands.clear()
    hostile = "'; reboot; echo $(id) %s \"x\" ñ 😀"
    d.act(Action.tap(540, 825))
    d.act(Action.type(hostile))
    d.act(Action.home())
    assert adb.commands[0] == "input tap 540 825"
    parsed = sh_parse(adb.commands[1])
    assert parsed[:6] == ["am", "broadcast", "-a", "ADB_INPUT_B64", "--es", "msg"]
    assert base64.b64decode(parsed[6]).decode() == hostile
    assert adb.commands[2] == "input keyevent KEYCODE_HOME"
    h = d.health()
    assert h.ok and h.info["serial"] == FakeAdb.SERIAL


def test_health_fails_without_the_ime_and_for_an_unknown_serial():
    srv = FakeAdb((FIX / "uiautomator_settings.xml").read_bytes(), ime="com.google.android.inputmethod.latin/.IME")
    try:
        h = _device(srv).health()
        assert not h.ok and "ADBKeyBoard" in h.detail
        assert _device(srv, text_input="input").health().ok
        with pytest.raises(DeviceError) as e:
            _device(srv, serial="emulator-9999").observe()
        assert e.value.reason == "device_offline"
    finally:
        srv.close()


def test_device_that_stops_answering_times_out(adb):
    d = _device(adb, timeout_s=0.3)
    d.observe()
    adb.hang = True
    t0 = time.monotonic()
    with pytest.raises(DeviceTimeout):
        d.observe()
    assert time.monotonic() - t0 < 1.5


def test_pool_over_adb_rolls_back_then_gives_up_on_a_silent_device(adb):
    be = AndroidBackend(serials=[FakeAdb.SERIAL], config=AndroidConfig(adb_port=adb.port, timeout_s=0.3, settle_s=0),
                        snapshot_for=lambda task: AndroidSnapshot("clear", packages=("com.android.settings",)))
    with DevicePool(be, PoolConfig(size=1, call_timeout_s=5.0)) as pool:
        dev = pool.lease("settings-task")
        assert "pm clear com.android.settings" in adb.commands          # rolled back before use
        assert adb.commands[-3:] == ["getprop sys.boot_completed", "dumpsys power",
                                     "settings get secure default_input_method"]   # then probed
        dev.act(Action.tap(10, 10))
        adb.hang = True
        t0 = time.monotonic()
        with pytest.raises(DeviceError) as e:
            dev.act(Action.tap(10, 10))
        dt = time.monotonic() - t0
        st = pool.stats()["per_device"][0]
        with pytest.raises(DeviceError) as e2:
            be.create(1)                  # the serial is held until its device is closed
        assert e2.value.reason == "no_device"
    assert e.value.reason == "timeout" and dev.last_error == "timeout"
    assert 0.5 <= dt < 2.0                # the call (0.3 s) and the failed reconnect probe (0.3 s)
    assert st["reconnects"] == 1
    assert isinstance(be.create(1), AndroidDevice)    # closing the pool freed it
