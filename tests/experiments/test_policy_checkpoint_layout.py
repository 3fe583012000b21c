"""A saved planner whose weights do not fit this navrl's model (saved by another version,
with another input layout) is refused in one line — a typed error from the library, exit 2
from the CLI — instead of torch's ``size mismatch`` traceback."""
from __future__ import annotations

import pytest
import torch

from navrl.agent.policy.pointer import PointerPlanner
from navrl.cli.main import main
from navrl.experiments.pipeline import load_policy, save_policy
from navrl.rl.trainer import CheckpointError


def _saved(tmp_path, drop_column: bool):
    p = PointerPlanner(["Search", "Settings", "Done"], seed=0)
    path = save_policy(p, tmp_path / "planner.pt")
    if drop_column:   # what an older planner with one candidate feature fewer saved
        st = torch.load(path, map_location="cpu", weights_only=False)
        w = st["policy"]["model"]["cand_w.0.weight"]
        st["policy"]["model"]["cand_w.0.weight"] = w[:, :-1].clone()
        torch.save(st, path)
    return p, path


def test_a_planner_of_this_layout_loads_with_its_weights(tmp_path):
    p, path = _saved(tmp_path, drop_column=False)
    q = load_policy(path)
    for (k, a), (_, b) in zip(p.model.state_dict().items(), q.model.state_dict().items()):
        assert torch.equal(a, b), k


def test_another_layout_is_a_checkpoint_error_naming_the_tensor(tmp_path):
    _, path = _saved(tmp_path, drop_column=True)
    with pytest.raises(CheckpointError) as e:
        load_policy(path)
    msg = str(e.value)
    assert "another version" in msg and "cand_w.0.weight" in msg and "\n" not in msg


def test_the_cli_says_it_in_one_line_with_exit_2(tmp_path, capsys):
    _, path = _saved(tmp_path, drop_column=True)
    rc = main(["eval", "--policy", str(path), "--suite", "test-ios", "-n", "1", "--out", str(tmp_path / "ev")])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and "another version" in err
    assert not (tmp_path / "ev").exists() or not any((tmp_path / "ev").iterdir())


def test_a_checkpoint_carries_its_input_layout_and_another_one_is_named(tmp_path, capsys):
    """The saved state records the feature layout; a planner saved with another layout (here:
    one node feature more) is refused by naming the layout entry, before any weight is read."""
    from navrl.agent.policy.pointer.features import FEATURE_LAYOUT, NODE_FEATS
    _, path = _saved(tmp_path, drop_column=False)
    st = torch.load(path, map_location="cpu", weights_only=False)
    assert st["format"] == "navrl-policy-1" and st["policy"]["layout"] == FEATURE_LAYOUT
    st["policy"]["layout"] = {**FEATURE_LAYOUT, "node": NODE_FEATS + 1}
    torch.save(st, path)
    with pytest.raises(CheckpointError) as e:
        load_policy(path)
    assert f"node {NODE_FEATS + 1} (this navrl: {NODE_FEATS})" in str(e.value) and "\n" not in str(e.value)
    rc = main(["eval", "--policy", str(path), "--suite", "test-ios", "-n", "1", "--out", str(tmp_path / "ev")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "input layout node" in err
