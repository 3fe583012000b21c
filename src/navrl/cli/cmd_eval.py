"""``navrl eval``: an agent on a suite, with a progress bar and a summary line."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from navrl.cli.common import AGENTS, CLIError, make_planner, prepare_out_dir
from navrl.cli.parts import add_part_arguments, choose, close_farm, device_farm, eval_tasks, judge_set, need_expert


def register(sub) -> None:
    e = sub.add_parser("eval", help="evaluate an agent on a suite")
    e.add_argument("--agent", default="expert", choices=AGENTS,
                   help="expert (each task's own: the phone world's experts, MiniWoB++'s scripted solutions), random or api")
    e.add_argument("--policy", default=None, metavar="CHECKPOINT",
                   help="evaluate a trained planner instead of --agent: sft.pt, a trainer checkpoint or a run "
                        "directory (pointer, tiny text or Hugging Face planner); decodes greedily")
    e.add_argument("-n", "--episodes", type=int, default=None, help="episodes (default: two per template)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--batch", type=int, default=64, help="episodes run side by side")
    e.add_argument("--out", default=None, help="where trajectories and results.json go (default runs/eval-<suite>)")
    e.add_argument("--frames", action="store_true", help="also save PNG frames")
    e.add_argument("--overwrite", action="store_true", help="replace an evaluation already in OUT")
    add_part_arguments(e, default_suite="test-ios")
    e.set_defaults(fn=run)


def run(args) -> int:
    from navrl.cli.progress import bar
    from navrl.eval import EvalAborted, evaluate
    from navrl.fileio import atomic_write_text
    from navrl.rollout.storage import save_trajectories
    if args.episodes is not None and args.episodes <= 0:
        raise CLIError("--episodes must be positive")
    if args.batch <= 0:
        raise CLIError("--batch must be positive")
    suite, judge, devices = choose(args)
    if args.policy:
        planner = _policy(args.policy)
    else:
        planner = make_planner(args.agent, args.seed)
    tasks = eval_tasks(suite, args, args.episodes, args.seed)
    if not args.policy:
        need_expert(suite, tasks, args)
    if args.episodes is not None and len(tasks) < args.episodes:   # said, never silent
        sys.stderr.write(f"navrl: note: -n {args.episodes}: --suite {args.suite} has {len(tasks)} "
                         f"task{'s' if len(tasks) != 1 else ''}; evaluating {len(tasks)} episode"
                         f"{'s' if len(tasks) != 1 else ''}\n")
    judges = judge_set(judge, args)
    out = prepare_out_dir(args.out or f"runs/eval-{suite.name}", overwrite=args.overwrite)
    shots = args.frames or args.agent == "api" or judge == "llm"
    farm = device_farm(devices, args, min(args.batch, len(tasks)), screenshots=shots)
    batch = args.batch if farm is None else min(args.batch, len(tasks))
    total_steps = sum(t.max_steps for t in tasks)
    who = f"policy {Path(args.policy).name}" if args.policy else args.agent
    n = len(tasks)
    with bar(f"{who} on {args.suite} ({n} episode{'s' if n != 1 else ''}; steps, at most)", total_steps,
             info=False) as adv:
        try:
            res = evaluate(planner, suite.name, tasks=tasks, batch_size=batch, record_frames=args.frames,
                           progress=lambda k: adv(k), devices=farm, judges=tuple(judges[:3]))
        except EvalAborted as e:   # e.g. HTTP 401: one line, exit 2, the finished episodes saved
            save_trajectories(e.result.trajectories, out, frames=args.frames)
            atomic_write_text(out / "results.json", json.dumps({**e.result.to_dict(), "aborted": str(e),
                                                                "provenance": _provenance(args)}, indent=2))
            raise CLIError(f"{e}; the {len(e.result.trajectories)} finished episodes are saved in {out}") from None
        finally:
            farm_stats = close_farm(farm)
        adv.complete()
    save_trajectories(res.trajectories, out, frames=args.frames)
    atomic_write_text(out / "results.json", json.dumps({**res.to_dict(), "provenance": _provenance(args)}, indent=2))
    res.require_measured()   # every episode masked: an outage, not 0% (exit 3)
    print(res.summary())
    if farm_stats is not None and "hosts" in farm_stats:
        print(f"device farm: {farm_stats['hosts']} hosts, {farm_stats['devices']} devices, "
              f"{farm_stats['resets']} resets, {farm_stats['failures']} device failures, "
              f"{farm_stats['masked_host_lost']} masked (device_host_lost)")
    print(f"trajectories: {out / 'trajectories.jsonl'}")
    return 0


def _provenance(args) -> dict:
    """Version, commit, seed and a digest of what was evaluated (suite, tasks, agent or policy, judge, devices)."""
    from navrl.provenance import provenance
    what = {k: getattr(args, k, None) for k in ("suite", "tasks", "phone", "agent", "policy", "episodes", "seed",
                                                 "judge", "devices", "faults")}
    if args.policy:
        what["agent"] = None
    return {**provenance(args.seed, what), "evaluated": what}


def _policy(path: str):
    """A trained planner from a checkpoint, decoding greedily."""
    from navrl.agent.policy.base import GREEDY
    from navrl.experiments.pipeline import load_policy
    from navrl.rl.trainer import CheckpointError
    try:
        policy = load_policy(path)
    except CheckpointError as e:
        raise CLIError(f"--policy: {e}") from None
    return policy.sampled(GREEDY)
