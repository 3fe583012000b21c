"""Where a long run's memory goes (exploration.md §20): §18's from-the-start recipe (KL to the
starting planner, so a reference copy), with every 10 updates the resident memory before and
after glibc's ``malloc_trim``, the planner's caches (entries; bytes estimated from 100 sampled
entries, shared arrays counted in each), the module-level memos' sizes and the live objects by
type that grew.

    PYTHONPATH=src python docs/results/exploration/memsize.py SFT.pt --updates 30 --out runs/memsize
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from reduce import MultiAppTasks  # noqa: E402

from navrl.agent.policy.pointer import features as F  # noqa: E402
from navrl.experiments.pipeline import load_policy  # noqa: E402
from navrl.lru import BoundedCache  # noqa: E402
from navrl.rl.config import migrate_saved  # noqa: E402
from navrl.rl.presets import get_preset  # noqa: E402
from navrl.rl.sft import TemplateTeacher, collect_demonstrations  # noqa: E402
from navrl.rl.trainer import Trainer  # noqa: E402

RECIPE = {"run.eval_every": 0, "run.checkpoint_every": 1000, "run.torch_threads": 1, "data.task_pool": 0,
          "data.train_perturb": False, "run.seed": 1, "advantage.estimator": "gigpo_anchored",
          "exploration.rollout_temperature": 1.0, "exploration.explore_arg": 0.3, "exploration.self_imitation": 1.0,
          "exploration.handover_k": 1, "exploration.curriculum_threshold": 0.8, "exploration.handover_share": 0.5,
          "exploration.explore": 0.1, "exploration.curriculum_practice": 0.5,
          "exploration.unanimous_fail_penalty": 1.0, "exploration.curriculum_probe": True,
          "exploration.curriculum_window": 8, "rollout.reward_preset": "potential", "policy.kl_coef": 0.1}
"""§18's "all + KL 0.1" settings (the reduction's from-the-start runs)."""


def rss_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return float("nan")


def deep_bytes(o, seen: set | None = None, depth: int = 0) -> int:
    """Bytes of ``o`` and what it holds (arrays by their buffers), each object once."""
    seen = set() if seen is None else seen
    if id(o) in seen or depth > 6:
        return 0
    seen.add(id(o))
    if isinstance(o, np.ndarray):
        return o.nbytes + 112
    if isinstance(o, torch.Tensor):
        return o.numel() * o.element_size() + 100
    n = sys.getsizeof(o)
    if isinstance(o, dict):
        n += sum(deep_bytes(k, seen, depth + 1) + deep_bytes(v, seen, depth + 1) for k, v in o.items())
    elif isinstance(o, (list, tuple, set, frozenset)):
        n += sum(deep_bytes(x, seen, depth + 1) for x in o)
    elif hasattr(o, "__dict__"):
        n += deep_bytes(vars(o), seen, depth + 1)
    return n


def caches(policy) -> dict[str, tuple[int, float]]:
    """name -> (entries, estimated MB) of the planner's bounded caches."""
    tables = {"_cache": policy._cache, "_demo_ids": policy._demo_ids,
              **{f"vocab.{k}": c for k, c in vars(policy.vocab).items() if isinstance(c, BoundedCache)}}
    out = {}
    for name, c in tables.items():
        items = list(c._d.items())
        sample = random.Random(0).sample(items, min(100, len(items)))
        per = float(np.mean([deep_bytes(k) + deep_bytes(v) for k, v in sample])) if sample else 0.0
        out[name] = (len(items), len(items) * per / 2**20)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sft", help="the SFT checkpoint training starts from")
    ap.add_argument("--updates", type=int, default=30)
    ap.add_argument("--out", default="runs/memsize")
    args = ap.parse_args()
    cfg = get_preset("demo").train.override(migrate_saved({**RECIPE, "run.num_updates": args.updates})).validate()
    torch.set_num_threads(1)
    policy = load_policy(args.sft)
    demos = collect_demonstrations(policy, get_preset("demo").sft.n_tasks, TemplateTeacher(compact=True), seed=0)
    tr = Trainer(policy, cfg, args.out, tasks=MultiAppTasks("train"), sft_demos=demos)
    ref = tr.ref_policy
    print(f"reference copy shares the state cache: {ref is not None and ref._cache is policy._cache}")
    libc = ctypes.CDLL("libc.so.6")
    before: collections.Counter | None = None
    t0 = time.perf_counter()
    for u in range(1, args.updates + 1):
        tr.train_step()
        if u % 10 and u != 2:
            continue
        gc.collect()
        r = rss_mb()
        libc.malloc_trim(0)
        print(f"update {u}: rss {r:.0f} MB, after malloc_trim {rss_mb():.0f} MB; "
              f"{(time.perf_counter() - t0) / u:.1f} s/update", flush=True)
        for who, pol in (("planner", policy), ("reference", ref)):
            if pol is None or (who == "reference" and pol._cache is policy._cache):
                continue
            for k, (n, mb) in caches(pol).items():
                print(f"   {who}.{k}: {n} entries, ~{mb:.0f} MB")
        print("   module memos:", {n: f.cache_info().currsize for n, f in vars(F).items()
                                    if hasattr(f, "cache_info") and f.cache_info().currsize > 1000})
        now = collections.Counter(type(o).__name__ for o in gc.get_objects())
        if before is not None:
            print("   objects grown:", [(t, now[t] - before.get(t, 0)) for t, _ in (now - before).most_common(8)])
        before = now


if __name__ == "__main__":
    main()
