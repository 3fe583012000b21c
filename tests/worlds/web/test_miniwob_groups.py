"""MiniWoB++ breadth (issue #28): ``--suite miniwob --tasks`` takes groups (``all``, ``ccnet``,
``table23``, ``scripted``) besides task names; ``all`` and ``ccnet`` hold only task pages of the
installed package that run (docs/results/miniwob/breadth.md, written by bench/miniwob_probe.py)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from navrl.worlds.web.tasks import miniwob_available

_why = miniwob_available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"needs the miniwob package: {_why}")

from navrl.tasks.task import TaskError  # noqa: E402
from navrl.worlds.web.tasks import (CCNET_TASKS, MINIWOB_GROUPS, MINIWOB_NOT_RUNNING, MINIWOB_TASKS,  # noqa: E402
                                    TABLE_23_TASKS, miniwob_group, miniwob_installed_tasks, miniwob_tasks,
                                    resolve_miniwob_names)

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = ROOT / "src" / "navrl" / "experiments" / "configs"


def test_the_default_stays_the_scripted_tasks_and_table23_is_the_committed_runs_set():
    assert resolve_miniwob_names(()) == tuple(MINIWOB_TASKS) == resolve_miniwob_names(("scripted",))
    assert len(MINIWOB_TASKS) == 90
    committed = yaml.safe_load((CONFIGS / "miniwob.yaml").read_text())["tasks"]
    assert list(TABLE_23_TASKS) == committed and len(committed) == 23
    assert resolve_miniwob_names(("table23",)) == TABLE_23_TASKS       # as it was, whatever the probe says


def test_ccnet_is_the_anchor_tables_104_tasks_less_those_not_installed_or_not_running():
    with open(CONFIGS / "miniwob_anchors.csv") as f:
        rows = [r["task"] for r in csv.DictReader(f)]
    assert list(CCNET_TASKS) == rows and len(rows) == 104
    installed = set(miniwob_installed_tasks())
    ccnet = miniwob_group("ccnet")
    assert set(ccnet) == {t for t in rows if t in installed} - set(MINIWOB_NOT_RUNNING)
    assert "drag-item" not in ccnet and "drag-item" not in installed     # CC-Net's name; the package has drag-items
    assert len(ccnet) >= 80


def test_all_is_every_installed_page_that_runs_and_no_group_holds_one_that_does_not():
    installed = miniwob_installed_tasks()
    assert len(installed) >= 100
    assert set(MINIWOB_NOT_RUNNING) <= set(installed)          # the list names real pages (not stale)
    assert all(why.strip() for why in MINIWOB_NOT_RUNNING.values())
    everything = miniwob_group("all")
    assert set(everything) == set(installed) - set(MINIWOB_NOT_RUNNING)
    for g in ("all", "ccnet"):
        assert not set(miniwob_group(g)) & set(MINIWOB_NOT_RUNNING), g
    assert set(miniwob_group("ccnet")) < set(everything) and set(miniwob_group("scripted")) <= set(everything)
    assert not set(MINIWOB_GROUPS) & set(installed)            # a group name never hides a task page


def test_the_committed_breadth_table_agrees_with_the_code():
    rows = json.loads((ROOT / "docs" / "results" / "miniwob" / "breadth.json").read_text())["tasks"]
    assert sorted(r["task"] for r in rows) == sorted(miniwob_installed_tasks())
    assert {r["task"] for r in rows if not r["runs"]} == set(MINIWOB_NOT_RUNNING)


def test_names_and_groups_mix_in_order_each_once_and_unknown_names_are_refused():
    assert "click-pie" not in MINIWOB_TASKS
    got = resolve_miniwob_names(("click-pie", "scripted", "click-test", "click-pie"))
    assert got[0] == "click-pie" and got[1:] == tuple(MINIWOB_TASKS) and len(got) == len(MINIWOB_TASKS) + 1
    assert resolve_miniwob_names(("click-pie",)) == ("click-pie",)    # any page, scripted or not
    for bad in (("nosuch",), ("click-test", "ALL"), ("ccnet-104",)):
        with pytest.raises(TaskError, match="unknown MiniWoB task"):
            resolve_miniwob_names(bad)
    with pytest.raises(TaskError, match="unknown MiniWoB task group"):
        miniwob_group("nosuch")
    ts = miniwob_tasks(None, 0, names=["table23"], phone="160x210@1")
    assert [t.template for t in ts[:23]] == list(TABLE_23_TASKS) and len(ts) == 46


def test_the_suite_the_source_and_the_experiment_config_expand_groups():
    import random

    from navrl.experiments.miniwob import MiniWoBConfig
    from navrl.tasks.registry import SuiteOptions, get_suite
    s = get_suite("miniwob")
    assert s.task_names(("ccnet",)) == miniwob_group("ccnet") and s.task_names(()) == ()
    src = s.source(SuiteOptions(names=("all",)))
    drawn = {t.template for t in src.sample(200, random.Random(0))}
    assert drawn <= set(miniwob_group("all")) and len(drawn) > 50
    cfg = MiniWoBConfig(tasks=["table23", "click-pie"], phone="160x210@1").validate()
    assert cfg.tasks == list(TABLE_23_TASKS) + ["click-pie"]


@pytest.mark.parametrize("tasks", ["nosuch", "click-test,all-tasks"])
def test_the_cli_refuses_an_unknown_task_or_group_in_one_line(tasks, tmp_path, capsys):
    from navrl.cli.main import main
    rc = main(["eval", "--suite", "miniwob", "--tasks", tasks, "--out", str(tmp_path / "ev")])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(err) == 1 and err[0].startswith("navrl: error: --tasks: unknown MiniWoB task"), err
    assert not (tmp_path / "ev").exists()
