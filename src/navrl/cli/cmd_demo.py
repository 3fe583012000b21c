"""``navrl demo``: the main job on the embedded default (what ``make demo`` runs).

SFT the preset's planner (the pointer planner for ``demo``) on clean single-app expert demonstrations, evaluate it, train it
online with dense-reward RL (the preset's estimator) on the perturbed, multi-app train suite, evaluate again, and
write the report. ``--expert-only`` plays one expert episode and writes its filmstrip.
"""
from __future__ import annotations

import json
import time

from navrl.cli.common import add_preset_arguments

DEMO_FILES = ("sft", "rl", "trajectories.jsonl", "frames", "filmstrip.png")
"""What ``navrl demo`` (and ``--expert-only``) writes into OUT; a new demo there replaces them
(``make demo`` runs again); another command's run there is refused without ``--overwrite``."""


def register(sub) -> None:
    d = sub.add_parser("demo", help="the main job: SFT, then online dense RL, then the report")
    d.add_argument("--out", default="runs/demo",
                   help="folder for sft/ and rl/ (an earlier demo's there are replaced; default runs/demo)")
    d.add_argument("--overwrite", action="store_true", help="replace another command's run already in OUT")
    add_preset_arguments(d)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--expert-only", action="store_true", help="just one expert episode and its filmstrip")
    d.set_defaults(fn=run)


def run(args) -> int:
    from navrl.cli.common import prepare_out_dir
    from navrl.rl.presets import get_preset
    preset = None if args.expert_only else get_preset(args.preset, {"run.seed": args.seed})   # refused before OUT is touched
    out = prepare_out_dir(args.out, overwrite=args.overwrite, replace_own=DEMO_FILES)
    if args.expert_only:
        from navrl.agent.planner import ExpertPlanner
        from navrl.cli.cmd_play import play_episode
        from navrl.tasks.registry import get_suite
        path = play_episode(get_suite("train").task_from_name("shop_checkout", 3), ExpertPlanner(), out)
        print(f"filmstrip: {path.resolve()}")
        return 0
    from navrl.cli.cmd_sft import make_teacher, sft_with_progress
    from navrl.cli.cmd_train import train_with_progress
    from navrl.cli.progress import bar
    from navrl.eval import evaluate_trainer
    from navrl.experiments.pipeline import save_filmstrips
    from navrl.fileio import atomic_write_text
    from navrl.report.html import build_report
    from navrl.rl.trainer import Trainer
    t_start = time.perf_counter()
    suites = ("test-ios", "test-android")
    n_eval = preset.train.run.eval_episodes

    print(f"[1/4] SFT of the {preset.planner} planner ({preset.name} preset)")
    policy, sres = sft_with_progress(preset, out / "sft", make_teacher("templates"), args.seed)
    print(f"      held-out loss {sres.heldout_before:.3f} -> {sres.heldout_after:.3f} ({sres.seconds:.0f} s, "
          f"{policy.n_params():,} parameters)")

    # PPO-ptx (policy.sft_coef > 0) keeps fitting the same demonstrations while RL learns
    trainer = Trainer(policy, preset.train, out / "rl",
                      sft_demos=sres.demos if preset.train.policy.sft_coef > 0 else None)

    from navrl.eval import evaluation_plan
    eval_steps = sum(k for _, _, k in evaluation_plan(trainer, suites, n_eval))   # the tasks' own step limits

    def evaluate(label: str) -> dict:
        with bar(f"evaluate {label} (steps, at most)", eval_steps, info=False) as adv:
            res = evaluate_trainer(trainer, suites, n_eval, progress=lambda k: adv(k))
        for s, r in res.items():
            print(f"      {label:>4s} {s:13s} {r.summary().splitlines()[0]}")
        return res

    print("[2/4] evaluate after SFT")
    before = evaluate("SFT")
    print(f"[3/4] online RL ({preset.train.advantage.estimator}): {preset.train.run.num_updates} updates x "
          f"{preset.train.trajectories_per_update} rollouts")
    train_with_progress(trainer, preset.train.run.num_updates, 0)
    print("[4/4] evaluate after RL")
    from navrl.agent.policy.base import GREEDY
    from navrl.eval import evaluate as run_eval, failures_fixed, paired_gain_interval
    greedy = trainer.policy.sampled(GREEDY)
    after = {}
    with bar("evaluate RL (steps, at most)", eval_steps, info=False) as adv:
        for s in suites:
            after[s] = run_eval(greedy, s, n_eval, record_frames=True, progress=lambda k: adv(k))
    for s, r in after.items():
        print(f"        RL {s:13s} {r.summary().splitlines()[0]}")
    trainer.logger.log({"kind": "eval", "update": trainer.update, **{s: r.to_dict() for s, r in after.items()}})
    strips = save_filmstrips([t for r in after.values() for t in r.trajectories], trainer.run_dir)
    summary = {}
    for s in suites:
        a, b = after[s], before[s]
        lo, hi, _ = paired_gain_interval(a, b)   # same tasks before and after: paired interval
        summary[s] = {"sft": b.success_rate, "rl": a.success_rate, "episodes": a.n,
                      "gain_points": 100 * (a.success_rate - b.success_rate),
                      "gain_ci_points": [100 * lo, 100 * hi],
                      "sft_failures_fixed": failures_fixed(b.success_rate, a.success_rate)}
    summary["minutes"] = round((time.perf_counter() - t_start) / 60, 1)
    from navrl.provenance import provenance
    summary["provenance"] = provenance(args.seed, preset)
    atomic_write_text(trainer.run_dir / "summary.json", json.dumps(summary, indent=2))
    from navrl.tasks.registry import get_world
    breakdown_markdown = get_world("phone").hook("breakdown")
    atomic_write_text(trainer.run_dir / "breakdown.md", "".join(
        breakdown_markdown(before[s].trajectories, after[s].trajectories, s) for s in suites))
    report = build_report(trainer.run_dir)
    for s in suites:
        g = summary[s]
        print(f"{s}: SFT {100 * g['sft']:.1f}% -> RL {100 * g['rl']:.1f}% ({g['gain_points']:+.1f} points, "
              f"95% CI {g['gain_ci_points'][0]:+.1f} to {g['gain_ci_points'][1]:+.1f}; {g['episodes']} episodes each)"
              + ("" if g["sft_failures_fixed"] is None else f"; fixes {100 * g['sft_failures_fixed']:.1f}% of SFT's failures"))
    print(f"total time: {summary['minutes']:.1f} min")
    print(f"report: {report.resolve()}")
    print(f"breakdown by family and perturbation: {(trainer.run_dir / 'breakdown.md').resolve()}")
    for kind, path in strips.items():
        print(f"filmstrip ({kind}): {path.resolve()}")
    return 0
