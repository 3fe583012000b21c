"""``data.multi_app_share``: each update's fresh task groups hold round(share x k) tasks that use
more than one app (stratified rejection sampling over the source's own draws)."""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import pytest

from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.sampling import draw_with_share, is_multi_app


@dataclass(frozen=True)
class _T:
    id: str
    apps: tuple


def _source(multi_every: int | None):
    """Draws tasks of which one in ``multi_every`` uses two apps (None: never)."""
    count = Counter()

    def sample(k, rng):
        out = []
        for _ in range(k):
            count["drawn"] += 1
            i = rng.randrange(10**9)
            multi = multi_every is not None and i % multi_every == 0
            out.append(_T(f"t{i}", ("Maps", "Calendar") if multi else ("Notes",)))
        return out
    return sample, count


@pytest.mark.parametrize("share,k,want", [(0.5, 16, 8), (0.25, 16, 4), (1.0, 8, 8), (0.3, 10, 3)])
def test_the_share_of_multi_app_tasks_is_exact(share, k, want):
    sample, _ = _source(7)
    rng = random.Random(0)
    for _ in range(5):
        tasks = draw_with_share(sample, k, rng, share)
        assert len(tasks) == k and len({t.id for t in tasks}) == k
        assert sum(map(is_multi_app, tasks)) == want


def test_share_zero_is_the_source_itself():
    sample, _ = _source(7)
    a = draw_with_share(sample, 16, random.Random(3), 0.0)
    b = sample(16, random.Random(3))
    assert a == b


def test_a_source_without_multi_app_tasks_fills_the_batch_and_stops():
    sample, count = _source(None)
    tasks = draw_with_share(sample, 16, random.Random(0), 0.5, max_rounds=4)
    assert len(tasks) == 16 and not any(map(is_multi_app, tasks))
    assert count["drawn"] == 4 * 16          # bounded: max_rounds draws of k, then it gives up


def test_the_config_field_is_checked():
    TrainConfig().override({"data.multi_app_share": 0.5}).validate()
    with pytest.raises(ConfigError, match="multi_app_share"):
        TrainConfig().override({"data.multi_app_share": 1.5}).validate()


def test_the_trainer_draws_the_share_from_the_phone_world(tmp_path):
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner
    from navrl.rl.trainer import Trainer
    p = PointerPlanner(["tap", "the"], PointerConfig(d_model=16, n_layers=1, n_heads=2, d_ff=16))
    cfg = TrainConfig().override({"rollout.tasks_per_update": 16, "rollout.rollouts_per_task": 2,
                                  "run.num_updates": 1, "data.multi_app_share": 0.5})
    tr = Trainer(p, cfg, tmp_path, log=False)
    for _ in range(3):
        tasks = tr._next_tasks()
        assert len(tasks) == 16 and sum(map(is_multi_app, tasks)) == 8
    # without the share the train suite gives ~7 of 47 templates' worth
    tr.cfg = TrainConfig().override({"rollout.tasks_per_update": 16})
    assert sum(sum(map(is_multi_app, tr._next_tasks())) for _ in range(10)) < 60


def test_a_task_pool_holds_the_share(tmp_path):
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner
    from navrl.rl.trainer import Trainer
    p = PointerPlanner(["tap", "the"], PointerConfig(d_model=16, n_layers=1, n_heads=2, d_ff=16))
    cfg = TrainConfig().override({"rollout.tasks_per_update": 8, "data.task_pool": 40, "data.multi_app_share": 0.25})
    tr = Trainer(p, cfg, tmp_path, log=False)
    tr._next_tasks()
    assert len(tr._pool) == 40 and sum(map(is_multi_app, tr._pool)) == 10
