"""``navrl train``: online RL of the planner on any task source, judges and devices
(``--suite``, ``--judge``, ``--devices``; the phone world with oracle judges by default)."""
from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from pathlib import Path

from navrl.cli.common import CLIError, add_preset_arguments, prepare_out_dir, unknown_field
from navrl.cli.parts import add_part_arguments, choose, close_farm, device_farm, judge_set, task_source
from navrl.judge.rewards import REWARD_PRESETS


def register(sub) -> None:
    t = sub.add_parser("train", help="online RL (PPO / GiGPPO / GRPO / GiGPO) from an SFT policy or from scratch")
    add_preset_arguments(t)
    t.set_defaults(preset=None)   # None: the preset's default, or with --resume the run's own preset
    t.add_argument("--init", help="SFT policy (sft.pt) to start from; without it (and without --resume) "
                                          "a fresh planner of the preset's kind is trained by RL from scratch")
    t.add_argument("--out", default="runs/train")
    t.add_argument("--resume", action="store_true", help="continue from OUT's last checkpoint")
    t.add_argument("--overwrite", action="store_true", help="replace a run already in OUT")
    t.add_argument("--max-masked-updates", type=int, default=None, metavar="N",
                   help="stop after N updates in a row whose every rollout was masked (default 3; 0: never)")
    from navrl.rl.estimators import AdvantageEstimator   # built-in names only: the registry imports torch
    t.add_argument("--estimator", metavar="NAME",
                   help=f"advantage estimator: {' | '.join(e.value for e in AdvantageEstimator)}, or a name a --plugin "
                        "module registered (all are checked against navrl.rl.advantages' registry)")
    t.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE (a module name or a .py file) first, e.g. to register an estimator "
                        "with @navrl.rl.advantages.register_estimator; repeatable")
    t.add_argument("--reward", choices=sorted(REWARD_PRESETS), help="reward table preset (docs/design.md §4b)")
    t.add_argument("--updates", type=int, help="number of updates (overrides the preset)")
    t.add_argument("--seed", type=int)
    t.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="override any TrainConfig field by its dotted name (JSON value), e.g. --set "
                        "policy.policy_lr=1e-4; sections: rollout, advantage, policy, critic, exploration, data, run")
    add_part_arguments(t)
    t.set_defaults(fn=run)


def load_plugins(items: list[str]) -> None:
    """Import each ``--plugin`` (an importable module name or a path to a .py file) once, so the
    estimators it registers exist before the config is checked. A bad plugin is a CLIError."""
    import importlib
    import importlib.util
    import sys
    for item in items:
        try:
            if not item.endswith(".py"):
                importlib.import_module(item)
                continue
            path = Path(item).resolve()
            if not path.is_file():
                raise CLIError(f"--plugin {item}: no such file")
            name = f"navrl_plugin_{path.stem}"
            if getattr(sys.modules.get(name), "__file__", None) == str(path):
                continue   # already loaded in this process: registering twice would fail
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise CLIError(f"--plugin {item}: not an importable Python file")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        except CLIError:
            raise
        except Exception as e:   # ImportError, a syntax error, a duplicate estimator name, ...
            raise CLIError(f"--plugin {item}: {type(e).__name__}: {e}") from None


def parse_overrides(items: list[str]) -> dict:
    """``--set SECTION.FIELD=VALUE`` items as dotted name -> value (JSON, else the string).
    A flat name of an earlier version is refused with the message naming its new one."""
    from navrl.rl.config import ConfigError, TrainConfig, UnknownField
    out = {}
    for it in items:
        k, eq, v = it.partition("=")
        if not eq:
            raise CLIError(f"bad --set {it!r}: use SECTION.FIELD=VALUE with a TrainConfig field")
        try:
            TrainConfig.check_name(k)
        except UnknownField:        # no such name: the closest and every valid one
            raise unknown_field(k, TrainConfig) from None
        except ConfigError as e:    # an old flat name: the message names the new one
            raise CLIError(f"bad --set {it!r}: {e}") from None
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


def train_with_progress(trainer, num_updates: int, evaluate_every: int, on_eval=None):
    """Run ``trainer.fit`` to ``num_updates`` with a progress bar; a checkpoint every
    ``cfg.run.checkpoint_every`` updates, on Ctrl-C, on an outage and at the end; an evaluation
    (:func:`navrl.eval.evaluate_trainer`, ``on_eval(update, results)``) every ``evaluate_every``
    updates but the last (0: none). Returns the :class:`~navrl.rl.callbacks.FitResult`.

    Ctrl-C saves the state of the last *completed* update (a snapshot taken before each
    update), never a half-updated one, so ``--resume`` reproduces the uninterrupted run.
    An :class:`~navrl.errors.Outage` (too many fully masked updates) saves a checkpoint too."""
    from navrl.cli.progress import bar
    from navrl.eval import evaluate_trainer
    from navrl.rl.callbacks import CheckpointCallback, EvalCallback, ProgressCallback

    def handler(signum, frame):
        raise KeyboardInterrupt
    callbacks = [ProgressCallback(progress_text, display=lambda total: bar("online RL", total)),
                 CheckpointCallback(trainer.cfg.run.checkpoint_every, on_error=True,
                                    report=lambda msg: print(f"{msg}; continue with --resume")),
                 EvalCallback(evaluate_trainer, every=evaluate_every, at_target=False, on_result=on_eval)]
    old = signal.signal(signal.SIGINT, handler)
    try:
        return trainer.fit(num_updates, callbacks)
    finally:
        signal.signal(signal.SIGINT, old)


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
            # the run's own config, as whichever navrl version wrote it (earlier ones: flat names)
            saved = TrainConfig.from_saved(st["config"] if isinstance(st.get("config"), dict) else {})
            cfg = resumed_config(out, saved, over or {})
            policy = load_policy(out)
            run = _saved_run(out)
            parts = _check_parts(out, _parts(args, cfg), resume=True)
            n_demos = run.get("sft_demo_tasks", preset.sft.n_tasks)   # the saved run's demonstrations
            trainer = Trainer(policy, cfg, out, **parts.kwargs, sft_demos=_sft_demos(policy, cfg, n_demos))
            trainer.resume(out)
            return trainer
        if args.init:
            policy = load_policy(args.init)
        else:
            policy, preset = _from_scratch(preset, over or {}, _suite_world(args))
        parts = _parts(args, preset.train)
        try:
            prepare_out_dir(out, overwrite=args.overwrite, resumable=True)   # after every input is known good: --overwrite deletes
            n_demos = preset.sft.n_tasks if preset.train.policy.sft_coef > 0 else None
            _check_parts(out, parts, resume=False, run={"preset": preset.name, "sft_demo_tasks": n_demos})
            return Trainer(policy, preset.train, out, **parts.kwargs,
                           sft_demos=_sft_demos(policy, preset.train, n_demos))
        except BaseException:
            close_farm(parts.kwargs["devices"])
            raise
    except (CheckpointError, ConfigError) as e:
        raise CLIError(str(e)) from None


def _suite_world(args) -> str:
    """The world of ``--suite`` (whose vocabulary a fresh planner learns; the phone world's by default)."""
    from navrl.cli.parts import parse_suite
    return parse_suite(args).suite.world or "phone"


def _from_scratch(preset, over: dict, world: str = "phone"):
    """No ``--init``: a fresh planner of the preset's kind, trained by RL alone (as the
    MiniWoB++ experiment's RL-only arm). PPO-ptx needs demonstrations an SFT stage would have
    made, so ``policy.sft_coef`` is 0 unless ``--set policy.sft_coef=...`` asks for it."""
    from dataclasses import replace

    from navrl.experiments.pipeline import build_policy
    if "policy.sft_coef" not in over:
        preset = replace(preset, train=preset.train.override({"policy.sft_coef": 0.0}))
    policy = build_policy(preset, preset.train.run.seed, world)
    print(f"no --init: a fresh {preset.planner} planner ({policy.n_params():,} parameters) trained by RL "
          f"from scratch (PPO-ptx coefficient {preset.train.policy.sft_coef:g})")
    return policy, preset


@dataclass
class _Parts:
    kwargs: dict
    """tasks, judges, devices: the Trainer's keyword arguments."""
    spec: dict
    """What the flags chose (suite, judge, devices), saved with the run as parts.json."""


def _parts(args, cfg) -> _Parts:
    """The task source, judges and device farm the flags choose (docs/design.md §6: real parts)."""
    suite, judge, devices = choose(args)
    tasks = task_source(suite, args, perturb=None if cfg.data.train_perturb else False)
    judges = judge_set(judge, args)
    # the presets' planners read no pixels: GiGPO's perceptual hashes need small images only
    shots = "eager" if judge == "llm" else "thumb" if cfg.estimator_spec.needs_state_hashes else "off"
    farm = device_farm(devices, args, cfg.trajectories_per_update, screenshots=shots)
    spec = {"suite": args.suite, "tasks": args.tasks, "judge": judge, "devices": devices}
    return _Parts({"tasks": tasks, "judges": judges, "devices": farm}, spec)


RESUME_MAY_CHANGE = ("num_updates", "max_masked_updates", "checkpoint_every", "eval_every", "eval_episodes")
"""Settings a resumed run may be given anew (how long it runs, what it records), not what it
learns: fields by their own name, in whichever config section holds them."""


def _flat(d: dict, pre: str = "") -> dict:
    """A config dict with its sections (if any) flattened to ``section.field`` names."""
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{pre}{k}.") if isinstance(v, dict) else {f"{pre}{k}": v})
    return out


def resumed_config(out: Path, saved, over: dict):
    """The saved run's config (a TrainConfig) with ``over`` applied; an override that changes
    what the run learns (anything but :data:`RESUME_MAY_CHANGE`) is refused in one line naming it."""
    new = saved.override(over).validate()
    base = _flat(saved.to_dict())
    diff = [(k, base.get(k), v) for k, v in _flat(new.to_dict()).items()
            if v != base.get(k) and k.rpartition(".")[2] not in RESUME_MAY_CHANGE]
    if diff:
        said = ", ".join(f"{k}={a} (not {b})" for k, a, b in diff)
        may = [k for k in base if k.rpartition(".")[2] in RESUME_MAY_CHANGE]
        raise CLIError(f"--resume: the run in {out} was trained with {said}; only {', '.join(may)} may change "
                       "on resume (another --out starts a new run)")
    return new


def _saved_run(out: Path) -> dict:
    """What ``out/parts.json`` recorded of a run (its parts, preset and demonstrations), {} if none."""
    try:
        d = json.loads((out / "parts.json").read_text())
    except (OSError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


def resume_preset(args) -> str:
    """The preset a ``--resume`` continues with: the run's own; ``--preset`` naming another is refused."""
    from navrl.rl.presets import ALIASES, DEFAULT_PRESET
    saved = _saved_run(Path(args.out)).get("preset")
    given = ALIASES.get(args.preset, args.preset) if args.preset else None
    if given and saved and given != saved:
        raise CLIError(f"--resume: the run in {args.out} was trained with --preset {saved}, not {given}; "
                       "drop --preset (or give the same), or start a new run with another --out")
    return saved or given or DEFAULT_PRESET


def _check_parts(out: Path, parts: _Parts, resume: bool, run: dict | None = None) -> _Parts:
    """A new run records its parts (and ``run``: its preset and demonstrations); a resumed one
    must be given the same parts."""
    from navrl.fileio import atomic_write_text
    f = out / "parts.json"
    if resume and f.exists():
        saved = json.loads(f.read_text())
        diff = [k for k in parts.spec if saved.get(k) != parts.spec[k]]
        if diff:
            close_farm(parts.kwargs["devices"])
            k = diff[0]
            raise CLIError(f"--resume: the run in {out} was trained with {k}={saved.get(k)}, not {parts.spec[k]}; "
                           "give the same --suite/--tasks/--judge/--devices")
    else:
        atomic_write_text(f, json.dumps({**parts.spec, **(run or {})}, indent=2) + "\n")
    return parts


def _sft_demos(policy, cfg, n_tasks: int | None):
    """The demonstrations of the SFT stage (its ``n_tasks`` tasks, same teacher) for ``policy.sft_coef > 0``."""
    if cfg.policy.sft_coef <= 0 or not n_tasks:
        return None
    from navrl.rl.sft import TemplateTeacher, collect_demonstrations
    return collect_demonstrations(policy, n_tasks, TemplateTeacher(compact=True), seed=0)


def final_evaluation(trainer) -> dict:
    """The trained planner's greedy evaluation (:func:`navrl.eval.evaluate_trainer`), announced
    (what runs: suites, episodes, the setting that sizes it) and with a progress bar; filmstrips
    of a success and a failure go to RUN/filmstrips (the report shows them)."""
    from navrl.cli.progress import bar
    from navrl.eval import evaluate_trainer, evaluation_plan
    plan = evaluation_plan(trainer)
    episodes = sum(n for _, n, _ in plan)
    print(f"final evaluation of the trained planner (greedy): {', '.join(f'{s} {n}' for s, n, _ in plan)} episodes "
          f"({episodes} in all; --set run.eval_episodes=N sizes it)")
    total = sum(k for _, _, k in plan)
    with bar(f"final evaluation ({episodes} episodes; steps, at most)", total, info=False) as adv:
        res = evaluate_trainer(trainer, progress=lambda k: adv(k), record_frames=_screens(trainer, plan))
        adv.complete()
    from navrl.experiments.pipeline import save_filmstrips   # a success and a failure, for the report
    save_filmstrips([t for r in res.values() for t in r.trajectories], trainer.run_dir)
    for r in res.values():   # the frames were for the filmstrips only
        for t in r.trajectories:
            t.frames = []
    return res


def _screens(trainer, plan) -> bool:
    """Whether the final evaluation can record frames for filmstrips: the phone world's suites
    on in-process devices (other devices and worlds may send no screenshot)."""
    from navrl.tasks.registry import get_suite, suites
    return trainer.devices is None and all(s in suites() and get_suite(s).world == "phone" for s, _, _ in plan)


def write_summary(trainer, res: dict, preset: str, seconds: float) -> Path:
    """RUN/summary.json of a ``navrl train`` run: the final evaluation per suite, the time, and
    its provenance (navrl version, commit, seed, config digest)."""
    from navrl.fileio import atomic_write_text
    from navrl.provenance import provenance
    cfg = trainer.cfg
    summary = {"command": "train", "preset": preset, "updates": trainer.update,
               "final_evaluation": {s: r.to_dict() for s, r in res.items()},
               "minutes": round(seconds / 60, 1), "provenance": provenance(cfg.run.seed, cfg)}
    return atomic_write_text(trainer.run_dir / "summary.json", json.dumps(summary, indent=2) + "\n")


def run(args) -> int:
    from navrl.rl.config import ConfigError
    from navrl.rl.presets import get_preset
    load_plugins(args.plugin)
    over = parse_overrides(args.set)
    for flag, name in (("estimator", "advantage.estimator"), ("seed", "run.seed"), ("reward", "rollout.reward_preset"),
                       ("updates", "run.num_updates"), ("max_masked_updates", "run.max_masked_updates")):
        if getattr(args, flag) is not None:
            over[name] = getattr(args, flag)
    if args.resume and not args.overwrite:
        name = resume_preset(args)
    else:
        from navrl.rl.presets import DEFAULT_PRESET
        name = args.preset or DEFAULT_PRESET
    try:
        preset = get_preset(name, over)
    except (ConfigError, TypeError, ValueError) as e:
        raise CLIError(str(e).splitlines()[0]) from None
    import time
    t_start = time.perf_counter()
    trainer = make_trainer(args, preset, over)
    n = trainer.cfg.run.num_updates
    try:
        train_with_progress(trainer, n, trainer.cfg.run.eval_every)
        res = final_evaluation(trainer)
    finally:
        stats = close_farm(trainer.devices)
        if stats is not None:
            line = ", ".join(f"{k} {stats[k]}" for k in ("backend", "hosts", "devices", "resets", "failures",
                                                          "quarantined", "masked_host_lost", "in_flight_peak")
                             if k in stats)
            ad = stats.get("adaptive")
            if ad:   # an adaptive farm: where its limit went
                line += (f", pages in flight: limit {ad['limit']} of {ad['maximum']} (lowest {ad['lowest']}, "
                         f"{ad['drops']} drops, {ad['raises']} raises, {ad['misses']} missed deadlines)")
            print("device farm: " + line)
    for s, r in res.items():
        print(f"{s}: {r.summary().splitlines()[0]}")
    write_summary(trainer, res, preset.name, time.perf_counter() - t_start)
    print(f"run: {trainer.run_dir}  (navrl report {trainer.run_dir})")
    return 0
