"""RL on the reduced pool of issue 26: multi-app train tasks only, every rollout handed over by
the expert k steps before the end (optionally moved earlier by the reverse curriculum), from an
SFT checkpoint; then the hand-over table on fixed tasks, paired with the starting checkpoint.

    PYTHONPATH=src python docs/results/exploration/reduce.py SFT.pt --out runs/reduce/base \\
        [--updates 30] [--set exploration.handover_k=3] [--set policy.sft_coef=0] ... [--eval-ks 1,2,3,0] [--eval-n 48]

Training draws fresh instances (clean: no pop-ups) of the train suite's multi-app templates
(instance seeds 0..89,999 of the train block); evaluation plays the first 48 instances
(``handover.multi_app_tasks``, seeds 0..47) and a validation block of the same templates with
seeds outside the training range (100,000+: never drawn in training).
"""
from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import time

from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from handover import fmt, multi_app_tasks, play  # noqa: E402


class MultiAppTasks:
    """Fresh clean instances of a phone suite's multi-app templates (template uniform)."""

    has_expert = True
    default_judge = "oracle"

    def __init__(self, suite: str = "train"):
        from navrl.worlds.phone.suites import SUITES, suite_templates
        self.suite = self.name = suite
        self.d = SUITES[suite]
        self.templates = [t for t in suite_templates(suite) if len(t.apps) > 1]

    def sample(self, k: int, rng: random.Random) -> list:
        from navrl.worlds.phone.sim import PerturbConfig
        from navrl.worlds.phone.task import make_task
        out = []
        for _ in range(k):
            t = rng.choice(self.templates)
            out.append(make_task(t.name, self.d.seed_base + rng.randrange(90_000), suite=self.suite,
                                 skin=self.d.skin, layout=self.d.layout, perturb=PerturbConfig.off()))
        return out


def table(policy, ks, n, seed) -> dict:
    tasks = multi_app_tasks("train", n, seed)
    out = {}
    for k in ks:
        trajs = play(policy, tasks, k)
        out[k] = {t.task["id"]: bool(t.success) for t in trajs if t.valid}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("init")
    ap.add_argument("--out", required=True)
    ap.add_argument("--updates", type=int, default=30)
    ap.add_argument("--set", action="append", default=[], help="TrainConfig SECTION.FIELD=value (Python literal)")
    ap.add_argument("--eval-ks", default="1,2,3,0")
    ap.add_argument("--eval-n", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resume", default=None, help="a checkpoint of an earlier reduce.py run with the same settings to continue "
                    "(to --updates in all; the before-table is still the init's)")
    ap.add_argument("--save-every", type=int, default=0, help="also save a checkpoint every this many updates")
    ap.add_argument("--judge", default="oracle", help="the training rollouts' judge set (oracle, oracle-best); "
                    "evaluation counts successes, which both judge alike")
    ap.add_argument("--plugin", default=None, help="module imported before training (mechanisms under test)")
    a = ap.parse_args(argv)
    import torch
    from navrl.experiments.pipeline import load_policy
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    if a.plugin:
        import importlib
        importlib.import_module(a.plugin)
    over = {"run.num_updates": a.updates, "exploration.handover_k": 3, "run.eval_every": 0,
            "run.checkpoint_every": 1000, "run.torch_threads": 1, "data.task_pool": 0, "data.train_perturb": False,
            "run.seed": a.seed}
    for kv in a.set:
        k, _, v = kv.partition("=")
        try:
            over[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            over[k] = v
    # (the runs recorded in exploration.md were made before TrainConfig's sections, with flat names:
    # they are read as the saved files of that version are)
    from navrl.rl.config import migrate_saved
    cfg = get_preset("demo").train.override(migrate_saved(over)).validate()
    torch.set_num_threads(1)
    policy = load_policy(a.init)
    demos = None
    if cfg.policy.sft_coef > 0:
        from navrl.rl.sft import TemplateTeacher, collect_demonstrations
        demos = collect_demonstrations(policy, get_preset("demo").sft.n_tasks, TemplateTeacher(compact=True), seed=0)
    out = Path(a.out)
    ks = [int(x) for x in a.eval_ks.split(",")]
    before = {"train": table(policy, ks, a.eval_n, 0), "val": table(policy, ks, a.eval_n, 1)}
    tasks = MultiAppTasks("train")
    tasks.default_judge = a.judge
    tr = Trainer(policy, cfg, out, tasks=tasks, sft_demos=demos)
    t0 = time.perf_counter()
    hist: list = []
    if a.resume:
        tr.load_checkpoint(a.resume)      # the policy, optimisers, RNGs and curriculum where that run stopped
        print(f"resumed at update {tr.update} from {a.resume}", flush=True)
    from navrl.rl.callbacks import Callback

    class Record(Callback):
        """Each update's line and history row (``fit``'s loop, so ``--set run.overlap=True`` works)."""

        def on_update_end(self, trainer, st):
            m = st.metrics
            start = m.get("unguided_success")
            m = {**m, "start_success": float("nan") if start is None else start}
            hist.append({"update": st.update, "per_template": dict(m.get("diag", {}).get("success_by_template", {})),
                         "start_success": m["start_success"],
                         **{k: v for k, v in m.items() if isinstance(v, (int, float, dict)) and k != "time"}})
            keys = ("success", "guided_success", "start_success", "dynamic/zero_variance_share", "dynamic/success_all",
                    "policy/entropy", "policy/pg_loss", "policy/clip_fraction", "policy/self_imitation_loss")
            print(f"update {st.update:3d} " + " ".join(f"{k.split('/')[-1]} {m[k]:.3f}" for k in keys
                                                         if isinstance(m.get(k), (int, float))),
                  m.get("curriculum/handover_k", ""), f"{time.perf_counter() - t0:.0f}s", flush=True)
            if a.save_every and st.update % a.save_every == 0:
                trainer.save_checkpoint()

    tr.fit(cfg.run.num_updates, [Record()])
    tr.save_checkpoint()
    after = {"train": table(policy, ks, a.eval_n, 0), "val": table(policy, ks, a.eval_n, 1)}
    from navrl.eval.intervals import paired_counts, paired_difference_interval
    res = {"config": cfg.to_dict(), "judge": a.judge, "updates": cfg.run.num_updates, "seconds": time.perf_counter() - t0, "rows": {},
           "history": hist, "after": after, "before": before}
    for split in ("train", "val"):
        for k in ks:
            b, f = before[split][k], after[split][k]
            cnt = paired_counts(f, b)
            lo, hi = paired_difference_interval(*cnt)
            label = "start" if k == 0 else f"last {k}"
            print(f"{split:5s} {label:>7s}: before {fmt(sum(b.values()), len(b))}  after {fmt(sum(f.values()), len(f))}"
                  f"  paired diff {100 * lo:+.0f} to {100 * hi:+.0f} points")
            per: dict = {}
            for tid, ok in f.items():
                tp = tid.split(":")[1]
                per.setdefault(tp, [0, 0, 0])
                per[tp][0] += b[tid]
                per[tp][1] += ok
                per[tp][2] += 1
            print("        " + ", ".join(f"{tp} {x}->{y}/{n}" for tp, (x, y, n) in sorted(per.items())))
            res["rows"][f"{split}/{k}"] = {"before": sum(b.values()), "after": sum(f.values()), "n": len(f),
                                           "diff_ci": [lo, hi]}
    (out / "reduce.json").write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
