"""How often hindsight relabelling (exploration.hindsight) finds a goal to relabel with: RL
updates of the `demo` preset's training (its task source, judges and sizes) from an SFT
checkpoint, with hindsight and self-imitation on; per update, the completions the terminal
judge failed and how many of them reached another goal their task names, by template. The
planner learns as in training (so later updates see the relabelled demonstrations' effect).

    PYTHONPATH=src python docs/results/exploration/hindsight_rate.py SFT.pt [--updates 5] [--set K=V ...]
"""
from __future__ import annotations

import argparse
import collections
import tempfile

from navrl.cli.cmd_train import parse_overrides
from navrl.experiments.pipeline import load_policy
from navrl.rl.presets import get_preset
from navrl.rl.trainer import Trainer
from navrl.worlds.phone.task import Template, get_template


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sft")
    ap.add_argument("--updates", type=int, default=5)
    ap.add_argument("--set", action="append", default=[], help="a TrainConfig override, dotted=value")
    a = ap.parse_args()
    over = {"exploration.hindsight": True, "exploration.self_imitation": 0.5, "policy.sft_coef": 0.0,
            "run.torch_threads": 1}
    over.update(parse_overrides(a.set))
    cfg = get_preset("demo", over).train
    total = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(load_policy(a.sft), cfg, tmp, log=False)
        for _ in range(a.updates):
            trajs, judge_time = tr.collect()
            failed = [t for t in trajs if t.valid and t.end == "complete" and not t.success]
            hit = [t for t in failed if t.info.get("hindsight")]
            by = collections.Counter(t.task["template"] for t in hit)
            hooked = [t for t in failed if type(get_template(t.task["template"])).achieved is not Template.achieved]
            st = tr.learn(trajs, {"rollout": 0.0, "judge": judge_time})
            total.update({"episodes": len(trajs), "failed completions": len(failed),
                          "of templates with a hook": len(hooked), "relabelled": len(hit)})
            print(f"update {st.update}: {len(trajs)} episodes, {sum(t.success for t in trajs)} successes, "
                  f"{len(failed)} failed completions ({len(hooked)} of templates with a hook), {len(hit)} relabelled "
                  f"({dict(by)}); "
                  f"diag {st.metrics['diag'].get('hindsight_episodes')}; self-imitation buffer {len(tr.good)}")
    print(f"total: {dict(total)}")


if __name__ == "__main__":
    main()
