"""Learnability sampling A/B on a MiniWoB++ subset: one BC planner, then BC + RL twice from it
(the same demonstrations for PPO-ptx, the same RL settings but data.learnability_sampling),
each evaluated greedily on the same fresh instances: paired.

usage: PYTHONPATH=src python docs/results/exploration/learnability_ab.py CONFIG.yaml OUT ARM=JSON_OVERRIDES [ARM=...]
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from navrl.agent.planner import ExpertPlanner
from navrl.agent.policy.base import greedy
from navrl.device.browser import BrowserBackend
from navrl.device.pool import PoolConfig
from navrl.device.ray_farm import make_device_factory
from navrl.eval import evaluate, paired_counts, paired_difference_interval
from navrl.experiments.miniwob import MiniWoBConfig, _miniwob_source
from navrl.experiments.pipeline import build_policy, load_policy, save_policy
from navrl.judge.sets import make_judges
from navrl.rl.callbacks import ProgressCallback
from navrl.rl.sft import TemplateTeacher, collect_demonstrations, train_sft
from navrl.rl.trainer import Trainer
from navrl.tasks.registry import SuiteOptions, get_suite

cfg = MiniWoBConfig.load(sys.argv[1])
out = Path(sys.argv[2])
arms = dict(a.split("=", 1) for a in sys.argv[3:])
miniwob = get_suite("miniwob")
preset, tcfg, judges = cfg.preset_used(), cfg.train_config(), make_judges(cfg.judge)
farm = make_device_factory(None, devices=cfg.pages, pool=PoolConfig(spare=cfg.spare_pages),
                           backend=BrowserBackend(screenshots="on_read"))
res: dict = {"arms": {}, "config": sys.argv[1]}
t0 = time.perf_counter()
try:
    scripted = [t for t in cfg.tasks if t in (miniwob.expert_names() or ())]
    bc = build_policy(preset, cfg.seed)
    demo_tasks = miniwob.tasks(len(scripted) * cfg.bc_episodes_per_task, cfg.seed + 1,
                               SuiteOptions(names=tuple(scripted), phone=cfg.phone))
    demos: list = []
    for i in range(0, len(demo_tasks), cfg.pages):
        demos += collect_demonstrations(bc, 0, TemplateTeacher(compact=True), tasks=demo_tasks[i:i + cfg.pages],
                                        expert=ExpertPlanner(), judges=judges, devices=farm)
    train_sft(bc, demos, preset.sft)
    save_policy(bc, out / "bc" / "policy.pt", {"stage": "bc", "tasks": scripted})
    print(f"BC: {len(demos)} steps, {time.perf_counter() - t0:.0f} s", flush=True)

    def evaluate_all(policy) -> dict:
        got = {}
        for name in cfg.tasks:
            tasks = miniwob.tasks(cfg.eval_episodes, cfg.eval_seed, SuiteOptions(names=(name,), phone=cfg.phone))
            r = evaluate(greedy(policy), "miniwob", tasks=tasks, devices=farm, judges=tuple(judges[:3]),
                         batch_size=cfg.pages)
            got[name] = r.successes_by_task()
            print(f"    {name:24s} {sum(got[name].values())}/{len(got[name])}", flush=True)
        return got

    print("BC only", flush=True)
    res["bc"] = evaluate_all(load_policy(out / "bc" / "policy.pt"))
    for arm, over in arms.items():
        t1 = time.perf_counter()
        c = tcfg.override({"run.seed": cfg.seed, **json.loads(over)})
        tr = Trainer(load_policy(out / "bc" / "policy.pt"), c, out / arm, tasks=_miniwob_source(cfg.tasks, cfg.phone),
                     judges=judges, devices=farm, sft_demos=demos if c.policy.sft_coef else None)
        print(f"{arm}: {over}", flush=True)
        fit = tr.fit(cfg.updates, [ProgressCallback(lambda m: f"    update {m['update']}: success {m.get('success')}")])
        res["arms"][arm] = {"override": over, "outcomes": evaluate_all(tr.policy),
                            "rl_seconds": time.perf_counter() - t1,
                            "learnability": tr.learnability.state() if tr.learnability else None}
        save_policy(tr.policy, out / arm / "policy.pt", {"stage": arm})
finally:
    farm.close()


def mean(o: dict) -> float:
    return 100 * sum(sum(v.values()) / len(v) for v in o.values()) / len(o)


def paired(a: dict, b: dict) -> tuple[float, float, float]:
    """b - a in points with Newcombe's paired 95% interval, over the instances both measured."""
    fa = {f"{t}/{i}": v for t in a for i, v in a[t].items()}
    fb = {f"{t}/{i}": v for t in b for i, v in b[t].items()}
    n11, n10, n01, n00 = paired_counts(fb, fa)      # first = b
    lo, hi = paired_difference_interval(n11, n10, n01, n00)
    return 100 * (n10 - n01) / (n11 + n10 + n01 + n00), 100 * lo, 100 * hi


lines = [f"BC {mean(res['bc']):.1f}"]
names = list(res["arms"])
for arm in names:
    o = res["arms"][arm]["outcomes"]
    d = paired(res["bc"], o)
    lines.append(f"{arm} {mean(o):.1f} (vs BC {d[0]:+.1f}, {d[1]:+.1f}..{d[2]:+.1f}); RL {res['arms'][arm]['rl_seconds']/60:.1f} min")
if len(names) == 2:
    d = paired(res["arms"][names[0]]["outcomes"], res["arms"][names[1]]["outcomes"])
    lines.append(f"{names[1]} - {names[0]}: {d[0]:+.1f} ({d[1]:+.1f}..{d[2]:+.1f})")
res["summary"] = lines
(out / "ab.json").write_text(json.dumps(res, indent=1, default=str))
print("\n".join(lines))
