"""``navrl train``: online RL of the planner against live devices (phone world by default)."""
from __future__ import annotations

import json
import signal
from pathlib import Path

from navrl.cli.common import FAULTS_HELP, CLIError, parse_faults, prepare_out_dir
from navrl.cli.farm_args import add_farm_arguments


def register(sub) -> None:
    t = sub.add_parser("train", help="online RL (PPO / GiGPPO / GRPO / GiGPO) from an SFT policy")
    t.add_argument("--preset", default="demo", help="default | demo (pointer planner) | demo-text | quick | quick-pointer")
    t.add_argument("--init", help="SFT policy (sft.pt) to start from; required unless --resume")
    t.add_argument("--out", default="runs/train")
    t.add_argument("--resume", action="store_true", help="continue from OUT's last checkpoint")
    t.add_argument("--overwrite", action="store_true", help="replace a run already in OUT")
    t.add_argument("--max-masked-updates", type=int, default=None, metavar="N",
                   help="stop after N updates in a row whose every rollout was masked (default 3; 0: never)")
    t.add_argument("--faults", default=None, metavar="NAME=RATE,...", help=FAULTS_HELP)
    t.add_argument("--estimator", choices=["ppo", "ppo_terminal_only", "gigppo", "grpo", "gigpo"])
    t.add_argument("--reward", choices=["default", "cautionary"], help="reward table preset")
    t.add_argument("--updates", type=int, help="number of updates (overrides the preset)")
    t.add_argument("--seed", type=int)
    t.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override any TrainConfig field (JSON value), e.g. --set policy_lr=1e-4")
    add_farm_arguments(t)
    t.set_defaults(fn=run)


def parse_overrides(items: list[str]) -> dict:
    from navrl.rl.config import TrainConfig
    known = {f for f in TrainConfig.__dataclass_fields__}
    out = {}
    for it in items:
        k, eq, v = it.partition("=")
        if not eq or k not in known:
            raise CLIError(f"bad --set {it!r}: use FIELD=VALUE with a TrainConfig field")
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def progress_text(m: dict) -> str:
    """The progress bar's line for one update's metrics (an all-masked update says so)."""
    warm = "  (critic warm-up)" if m.get("policy_frozen") else ""
    if m.get("success") is None:
        return f"all {m.get('masked', 0)} rollouts masked (infrastructure){warm}"
    return (f"success {100 * m['success']:.0f}%  return {m['mean_return']:+.2f}  "
            f"len {m['episode_length']:.1f}{warm}")


def train_with_progress(trainer, num_updates: int, evaluate_every: int, on_eval=None) -> None:
    """Run updates with a progress bar; a checkpoint every N updates, on Ctrl-C and at the end.

    Ctrl-C saves the state of the last *completed* update (a snapshot taken before each
    update), never a half-updated one, so ``--resume`` reproduces the uninterrupted run.
    An :class:`~navrl.errors.Outage` (too many fully masked updates) saves a checkpoint too."""
    from navrl.cli.progress import bar
    from navrl.errors import Outage
    cfg = trainer.cfg

    def handler(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGINT, handler)
    snap = None
    try:
        with bar("online RL", num_updates) as adv:
            adv(trainer.update, None)
            while trainer.update < num_updates:
                snap = trainer.checkpoint_bytes()
                st = trainer.train_step()
                snap = None
                adv(1, progress_text(st.metrics))
                if trainer.update % cfg.checkpoint_every == 0:
                    trainer.save_checkpoint()
                if evaluate_every and trainer.update % evaluate_every == 0 and trainer.update < num_updates:
                    res = trainer.evaluate()
                    if on_eval:
                        on_eval(trainer.update, res)
    except KeyboardInterrupt:
        # mid-update: the live state is half-updated; save the snapshot of the last completed one
        path = trainer.save_checkpoint(snapshot=snap if snap is not None and trainer.update == snap[0] else None)
        print(f"interrupted: checkpoint of update {path.stem.split('_')[-1].lstrip('0') or 0} saved to {path}; "
              "continue with --resume")
        raise
    except Outage:
        trainer.save_checkpoint()
        raise
    finally:
        signal.signal(signal.SIGINT, old)
    trainer.save_checkpoint()


def make_trainer(args, preset, over: dict | None = None):
    from navrl.experiments.pipeline import load_policy
    from navrl.rl.config import ConfigError
    from navrl.rl.trainer import CheckpointError, Trainer, load_checkpoint_file
    out = Path(args.out)
    if args.resume and args.overwrite:
        raise CLIError("--resume and --overwrite exclude each other")
    try:
        if args.resume:
            prepare_out_dir(out, resume=True)
            st = load_checkpoint_file(out)
            from navrl.rl.config import TrainConfig
            saved = st.get("config") if isinstance(st.get("config"), dict) else {}
            for k in ("estimator", "reward_preset"):
                if k in (over or {}) and str((over or {})[k]) != str(saved.get(k)):
                    raise CLIError(f"--resume: the run in {out} was trained with {k}={saved.get(k)}, not "
                                   f"{(over or {})[k]}; start a new run (another --out) to change it")
            cfg = TrainConfig.from_dict({**saved, **(over or {})})
            policy = load_policy(out)
            trainer = Trainer(policy, cfg, out, devices_factory=_devices(args, cfg.trajectories_per_update),
                              sft_demos=_sft_demos(policy, cfg, preset), faults=parse_faults(args.faults))
            trainer.resume(out)
            return trainer
        if not args.init:
            raise CLIError("--init SFT_POLICY is required (or --resume)")
        policy = load_policy(args.init)
        prepare_out_dir(out, overwrite=args.overwrite, resumable=True)   # after every input is known good: --overwrite deletes
        return Trainer(policy, preset.train, out,
                       devices_factory=_devices(args, preset.train.trajectories_per_update),
                       sft_demos=_sft_demos(policy, preset.train, preset), faults=parse_faults(args.faults))
    except (CheckpointError, ConfigError) as e:
        raise CLIError(str(e)) from None


def _sft_demos(policy, cfg, preset):
    """The demonstrations of the SFT stage (same tasks, same teacher) for ``sft_coef > 0``."""
    if cfg.sft_coef <= 0:
        return None
    from navrl.rl.sft import TemplateTeacher, collect_demonstrations
    return collect_demonstrations(policy, preset.sft.n_tasks, TemplateTeacher(compact=True), seed=0)


def _devices(args, batch: int = 512):
    """The device farm --ray selects (Ray device hosts), or None for the in-process default."""
    if not getattr(args, "ray", None):
        return None
    try:
        from navrl.device.ray_farm import make_device_factory
    except ImportError as e:
        raise CLIError(f"--ray needs the ray extra (pip install navrl[ray]): {e}") from None
    return make_device_factory(args.ray, devices=batch, hosts=args.hosts)


def run(args) -> int:
    from navrl.rl.config import ConfigError
    from navrl.rl.presets import get_preset
    over = parse_overrides(args.set)
    for k in ("estimator", "seed"):
        if getattr(args, k) is not None:
            over[k] = getattr(args, k)
    if args.reward:
        over["reward_preset"] = args.reward
    if args.updates is not None:
        over["num_updates"] = args.updates
    if args.max_masked_updates is not None:
        over["max_masked_updates"] = args.max_masked_updates
    parse_faults(args.faults)
    try:
        preset = get_preset(args.preset, **over)
    except (ConfigError, TypeError, ValueError) as e:
        raise CLIError(str(e).splitlines()[0]) from None
    trainer = make_trainer(args, preset, over)
    n = trainer.cfg.num_updates
    try:
        train_with_progress(trainer, n, trainer.cfg.eval_every)
        res = trainer.evaluate()
    finally:
        farm = trainer.devices_factory
        if farm is not None and hasattr(farm, "close"):
            print(f"device farm: {farm.stats()}")
            farm.close()
    for s, r in res.items():
        print(f"{s}: {r.summary().splitlines()[0]}")
    print(f"run: {trainer.run_dir}  (navrl report {trainer.run_dir})")
    return 0
