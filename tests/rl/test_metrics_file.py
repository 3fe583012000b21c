"""metrics.jsonl is crash-safe: fsync per record, readers skip a truncated last line with one
warning, other damage is a typed error, and a resumed run cuts the file back first."""
from __future__ import annotations

import json
import os

import pytest

from navrl.rl import metrics as M
from navrl.rl.metrics import MetricsError, MetricsLogger, read_metrics, truncate_metrics


def _write(run, *records, tail: bytes = b"") -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / "metrics.jsonl").write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)


UPD = [{"kind": "update", "update": u, "success": 0.1 * u, "masked_fraction": 0.0} for u in (1, 2, 3)]


def test_every_record_is_fsynced(tmp_path, monkeypatch) -> None:
    synced = []
    real = os.fsync
    monkeypatch.setattr(M.os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    lg = MetricsLogger(tmp_path, tensorboard=False)
    for r in UPD:
        lg.log(r)
    assert len(synced) == 3
    assert [r["update"] for r in read_metrics(tmp_path)] == [1, 2, 3]


@pytest.mark.parametrize("tail", [b'{"kind": "update", "upd', b"\x00\x00\x00\x00\x00\x00\x00\x00", b"\xff\xfe\x00garbage"])
def test_truncated_or_binary_last_line_is_skipped_with_one_warning(tmp_path, tail) -> None:
    _write(tmp_path, *UPD, tail=tail)
    warnings: list[str] = []
    recs = read_metrics(tmp_path, warn=warnings.append)
    assert [r["update"] for r in recs] == [1, 2, 3]
    assert len(warnings) == 1 and "truncated" in warnings[0]


@pytest.mark.parametrize("content,match", [
    (b"[1, 2, 3]\n", "expected a JSON object"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\n\x00\x01\n", "not a JSON record"),
    (b'{"kind": "update"}\n{"kind": "update", "update": 2}\n', "field 'update'"),
    (b'{"update": 1}\n', "field 'kind'"),
    (b'{"kind": "update", "update": "1"}\n', "field 'update'"),
    (b'{"kind": "update", "update": 1}\nnot json\n{"kind": "update", "update": 2}\n', "line 2"),
])
def test_damage_before_the_last_line_is_a_typed_error(tmp_path, content, match) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(content)
    with pytest.raises(MetricsError, match=match):
        read_metrics(tmp_path, warn=lambda m: None)


def test_a_directory_in_place_of_the_file_is_a_typed_error(tmp_path) -> None:
    (tmp_path / "metrics.jsonl").mkdir()
    with pytest.raises(MetricsError, match="directory"):
        read_metrics(tmp_path)


def test_truncate_keeps_records_up_to_the_update_and_drops_the_torn_line(tmp_path) -> None:
    ev = {"kind": "eval", "update": 2, "test-ios": {"success": 0.5}}
    _write(tmp_path, UPD[0], UPD[1], ev, UPD[2], tail=b'{"kind": "upd')
    assert truncate_metrics(tmp_path, 2, warn=lambda m: None) == 3
    data = (tmp_path / "metrics.jsonl").read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 3
    assert [(r["kind"], r["update"]) for r in read_metrics(tmp_path)] == [("update", 1), ("update", 2), ("eval", 2)]
    # appending after the cut gives well-formed lines and unique update numbers
    MetricsLogger(tmp_path, tensorboard=False).log(UPD[2])
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert all(isinstance(json.loads(x), dict) for x in lines)
    ups = [json.loads(x)["update"] for x in lines if json.loads(x)["kind"] == "update"]
    assert ups == [1, 2, 3]


def test_repeated_update_numbers_read_once_with_a_warning(tmp_path) -> None:
    _write(tmp_path, UPD[0], UPD[1], {**UPD[1], "success": 0.9}, UPD[2])
    warnings: list[str] = []
    recs = read_metrics(tmp_path, warn=warnings.append)
    assert [r["update"] for r in recs] == [1, 2, 3] and recs[1]["success"] == 0.9
    assert len(warnings) == 1
