"""``navrl sft``: reasoning synthesis + supervised warm start of the planner, from a suite's
experts: the phone world's expert (``train``) or MiniWoB++'s scripted solutions (``--suite miniwob``)."""
from __future__ import annotations

from pathlib import Path

from navrl.cli.common import CLIError, add_preset_arguments, prepare_out_dir


def register(sub) -> None:
    s = sub.add_parser("sft", help="demonstrations from the expert + supervised fine-tuning")
    add_preset_arguments(s)
    s.add_argument("--out", default="runs/sft")
    s.add_argument("--overwrite", action="store_true", help="replace an SFT run already in OUT")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--teacher", choices=["templates", "llm"], default="templates",
                   help="who writes reasoning and remaining plans (llm: NAVRL_API_* endpoint)")
    from navrl.cli.parts import add_suite_arguments
    add_suite_arguments(s, "train", "whose expert demonstrates (train: the phone world's expert on clean single-app "
                                    "tasks; miniwob: MiniWoB++'s scripted solutions in Chromium, successful episodes "
                                    "only)")
    s.add_argument("--batch", type=int, default=8, help="for suites on a device farm (miniwob): devices side by side")
    s.set_defaults(fn=run)


def make_teacher(name: str):
    from navrl.rl.sft import LLMTeacher, TemplateTeacher
    if name == "templates":
        return TemplateTeacher(compact=True)
    try:
        from navrl.api.client import APIConfig, ChatClient
        return LLMTeacher(ChatClient(APIConfig.from_env().require()))
    except ValueError as e:
        raise CLIError(f"--teacher llm: {e}") from None


def sft_with_progress(preset, out: Path, teacher, seed: int, collect=None, world: str = "phone"):
    from navrl.cli.progress import bar
    from navrl.experiments.pipeline import run_sft
    total = preset.sft.epochs * 10_000
    with bar("SFT", total) as adv:
        def prog(step: int, tot: int, loss: float) -> None:
            adv.set_total(tot)
            adv(1, f"loss {loss:.3f}")
        return run_sft(preset, out, teacher, seed, prog, collect=collect, world=world)


def suite_collector(suite, n_tasks: int, seed: int, batch: int):
    """Demonstrations from a suite's own experts (``Task.expert_step``) on fresh instances, on
    the suite's default devices (a browser pool for MiniWoB++), judged by its default judges:
    only the episodes they call a success are kept. ``suite``: a :class:`navrl.cli.parts.SuiteChoice`."""
    from dataclasses import replace

    from navrl.agent.planner import ExpertPlanner
    from navrl.cli.parts import close_farm, device_farm
    from navrl.judge.sets import make_judges
    from navrl.rl.sft import collect_demonstrations
    from navrl.tasks.task import TaskError
    s, opts = suite.suite, suite.options
    scripted = s.expert_names()
    names = list(opts.names) or (list(scripted) if scripted is not None else [])
    bad = [x for x in names if scripted is not None and x not in scripted]
    if bad:
        raise CLIError(f"--tasks: {bad[0]} has no scripted solution to learn from (scripted: "
                       f"{', '.join(scripted or ())})")
    if batch <= 0:
        raise CLIError("--batch must be positive")
    try:
        tasks = s.tasks(n_tasks, seed, replace(opts, names=tuple(names)))
    except TaskError as e:
        raise CLIError(str(e)) from None
    devices = s.devices[0]

    def collect(policy, teacher):
        farm = device_farm(devices, _NoRay(), min(batch, len(tasks)))
        try:
            demos = []
            for i in range(0, len(tasks), batch):
                demos += collect_demonstrations(policy, 0, teacher, tasks=tasks[i:i + batch], expert=ExpertPlanner(),
                                                judges=make_judges(s.default_judge(devices)), devices=farm)
            return demos
        finally:
            close_farm(farm)
    return collect


class _NoRay:
    """The farm flags of a command that has none: the in-process pool."""
    ray, hosts = None, 1


def run(args) -> int:
    from navrl.rl.config import ConfigError
    from navrl.rl.presets import get_preset
    from navrl.rl.sft import NoDemonstrations
    try:
        preset = get_preset(args.preset)
    except ConfigError as e:
        raise CLIError(str(e)) from None
    teacher = make_teacher(args.teacher)
    from navrl.cli.parts import need_available, parse_suite
    suite = parse_suite(args)
    need_available(suite)
    collect = None
    if args.suite != "train":   # the default path: the phone world's clean single-app train tasks
        collect = suite_collector(suite, preset.sft.n_tasks, args.seed, args.batch)
    out = prepare_out_dir(args.out, overwrite=args.overwrite)
    try:
        policy, res = sft_with_progress(preset, out, teacher, args.seed, collect, world=suite.suite.world or "phone")
    except NoDemonstrations as e:
        raise CLIError(str(e)) from None
    print(f"SFT: {res.n_train} train / {res.n_heldout} held-out steps, held-out loss "
          f"{res.heldout_before:.3f} -> {res.heldout_after:.3f} in {res.seconds:.0f} s")
    print(f"policy: {out / 'sft.pt'}")
    return 0
