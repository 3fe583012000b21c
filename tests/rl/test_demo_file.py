"""Demonstrations on disk (navrl.rl.demo_file): a round trip keeps every step and its task in order,
a file of other demonstrations or another format is refused by name, a stopped write leaves none."""
from __future__ import annotations

import gzip

import pytest

from navrl.rl.demo_file import DemoFileError, load_demonstrations, save_demonstrations
from navrl.rl.sft import Demo

STEPS = [("miniwob/click-test/3", Demo('{"goal": "Click the button."}', 'Step: Tap "Click Me!"')),
         ("miniwob/enter-text/9", Demo("prompt with \u00e9 and \"quotes\"\nand a newline", 'Step: Type "Jo"')),
         ("miniwob/enter-text/9", Demo("second step", "Step: Tap \"Submit\""))]
HEADER = {"tasks": ["click-test", "enter-text"], "seed": 1, "episodes_per_task": 40, "phone": "160x210@1"}


def test_a_round_trip_keeps_every_step_in_order(tmp_path):
    p = save_demonstrations(tmp_path / "d" / "demos.jsonl.gz", STEPS, HEADER)
    header, steps = load_demonstrations(p, expect=HEADER)
    assert steps == STEPS and header["episodes_per_task"] == 40 and header["format"] == "navrl-demos-1"
    assert save_demonstrations(tmp_path / "again.jsonl.gz", STEPS, HEADER).read_bytes() == p.read_bytes()


@pytest.mark.parametrize("expect, says", [({"seed": 2}, "other seed"), ({"episodes_per_task": 80}, "other episodes"),
                                          ({"tasks": ["click-test"]}, "other tasks")])
def test_a_file_of_other_demonstrations_is_refused_by_what_differs(tmp_path, expect, says):
    p = save_demonstrations(tmp_path / "demos.jsonl.gz", STEPS, HEADER)
    with pytest.raises(DemoFileError, match=says):
        load_demonstrations(p, expect={**HEADER, **expect})


def test_other_files_are_refused_in_one_line(tmp_path):
    other = tmp_path / "other.jsonl.gz"
    with gzip.open(other, "wt") as f:
        f.write('{"format": "something-else"}\n')
    with pytest.raises(DemoFileError, match="not a navrl demonstrations file"):
        load_demonstrations(other)
    (tmp_path / "plain.txt").write_text("not gzip")
    with pytest.raises(DemoFileError, match="unreadable"):
        load_demonstrations(tmp_path / "plain.txt")
    with pytest.raises(DemoFileError, match="unreadable"):
        load_demonstrations(tmp_path / "missing.jsonl.gz")


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    import navrl.fileio as fileio

    def broken(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(fileio.os, "replace", broken)
    with pytest.raises(OSError):
        save_demonstrations(tmp_path / "demos.jsonl.gz", STEPS, HEADER)
    assert list(tmp_path.iterdir()) == []
