"""TrainConfig.data.task_pool: a fixed pool of train tasks cycled tasks_per_update at a time."""
from __future__ import annotations

import pytest

from navrl.agent.policy.pointer import PointerConfig, PointerPlanner
from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.trainer import Trainer


def _trainer(tmp_path, **kw):
    """(``kw``: data-section fields)"""
    p = PointerPlanner(["tap", "the"], PointerConfig(d_model=16, n_layers=1, n_heads=2, d_ff=16))
    cfg = TrainConfig().override({"rollout.tasks_per_update": 3, "rollout.rollouts_per_task": 2, "rollout.max_steps": 2,
                                  "run.num_updates": 1, **{f"data.{k}": v for k, v in kw.items()}})
    return Trainer(p, cfg, tmp_path, log=False)


def test_pool_is_cycled_in_order(tmp_path):
    tr = _trainer(tmp_path, task_pool=5)
    seen = []
    for u in range(4):
        tr.update = u
        seen.append([t.id for t in tr._next_tasks()])
    pool = [t.id for t in tr._pool]
    assert len(pool) == 5
    flat = [i for ids in seen for i in ids]
    assert flat == [pool[k % 5] for k in range(12)]          # round robin over the pool
    # the pool is fixed by the seed: a second trainer draws the same instances
    tr2 = _trainer(tmp_path / "b", task_pool=5)
    tr2._next_tasks()
    assert [t.id for t in tr2._pool] == pool


def test_no_pool_draws_fresh_tasks(tmp_path):
    tr = _trainer(tmp_path)
    a = [t.id for t in tr._next_tasks()]
    b = [t.id for t in tr._next_tasks()]
    assert len(a) == 3 and a != b


def test_negative_pool_is_refused():
    with pytest.raises(ConfigError):
        TrainConfig().override({"data.task_pool": -1}).validate()
