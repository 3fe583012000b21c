"""``navrl sft``: reasoning synthesis + supervised warm start of the planner, from the phone
world's expert or MiniWoB++'s scripted solutions (``--suite miniwob``)."""
from __future__ import annotations

from pathlib import Path

from navrl.cli.common import CLIError, prepare_out_dir


def register(sub) -> None:
    s = sub.add_parser("sft", help="demonstrations from the expert + supervised fine-tuning")
    s.add_argument("--preset", default="demo", help="default | demo (pointer planner) | demo-text | quick | quick-pointer")
    s.add_argument("--out", default="runs/sft")
    s.add_argument("--overwrite", action="store_true", help="replace an SFT run already in OUT")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--teacher", choices=["templates", "llm"], default="templates",
                   help="who writes reasoning and remaining plans (llm: NAVRL_API_* endpoint)")
    s.add_argument("--suite", default="train", choices=["train", "miniwob"],
                   help="train: the phone world's expert on clean single-app tasks; miniwob: MiniWoB++'s scripted "
                        "solutions in Chromium (successful episodes only)")
    s.add_argument("--tasks", default=None, metavar="A,B,...",
                   help="with --suite miniwob: which tasks (those with a scripted solution; default all of them)")
    s.add_argument("--batch", type=int, default=8, help="with --suite miniwob: browser pages side by side")
    s.add_argument("--phone", default="iphone", metavar="PHONE",
                   help="with --suite miniwob: the screen (iphone, pixel, or WxH@scale: 160x210@1 is MiniWoB's own "
                        "frame); default iphone")
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


def sft_with_progress(preset, out: Path, teacher, seed: int, collect=None):
    from navrl.cli.progress import bar
    from navrl.experiments.pipeline import run_sft
    total = preset.sft.epochs * 10_000
    with bar("SFT", total) as adv:
        def prog(step: int, tot: int, loss: float) -> None:
            adv.set_total(tot)
            adv(1, f"loss {loss:.3f}")
        return run_sft(preset, out, teacher, seed, prog, collect=collect)


def miniwob_collector(names: list[str], n_tasks: int, seed: int, batch: int, phone: str = "iphone"):
    """Demonstrations from MiniWoB++'s scripted solutions on fresh instances, in a browser pool
    judged by the page (only the episodes the page calls a success are kept)."""
    from navrl.cli.parts import close_farm, device_farm
    from navrl.judge.sets import make_judges
    from navrl.rl.sft import collect_demonstrations
    from navrl.tasks.web import MINIWOB_SCRIPTS, ScriptedWebPlanner, miniwob_tasks
    names = names or list(MINIWOB_SCRIPTS)
    bad = [x for x in names if x not in MINIWOB_SCRIPTS]
    if bad:
        raise CLIError(f"--tasks: {bad[0]} has no scripted solution to learn from (scripted: "
                       f"{', '.join(MINIWOB_SCRIPTS)})")
    if batch <= 0:
        raise CLIError("--batch must be positive")
    tasks = miniwob_tasks(n_tasks, seed=seed, names=names, phone=phone)

    def collect(policy, teacher):
        farm = device_farm("browser", _NoRay(), min(batch, len(tasks)))
        try:
            demos = []
            for i in range(0, len(tasks), batch):
                demos += collect_demonstrations(policy, 0, teacher, tasks=tasks[i:i + batch], expert=ScriptedWebPlanner(),
                                                judges=make_judges("page"), devices=farm)
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
    collect = None
    if args.suite == "miniwob":
        from navrl.cli.parts import miniwob_phone, need_browser, split_names
        need_browser()
        collect = miniwob_collector(split_names(args.tasks), preset.sft.n_tasks, args.seed, args.batch,
                                    miniwob_phone(args))
    elif args.tasks:
        raise CLIError("--tasks chooses MiniWoB++ tasks: use it with --suite miniwob")
    out = prepare_out_dir(args.out, overwrite=args.overwrite)
    try:
        policy, res = sft_with_progress(preset, out, teacher, args.seed, collect)
    except NoDemonstrations as e:
        raise CLIError(str(e)) from None
    print(f"SFT: {res.n_train} train / {res.n_heldout} held-out steps, held-out loss "
          f"{res.heldout_before:.3f} -> {res.heldout_after:.3f} in {res.seconds:.0f} s")
    print(f"policy: {out / 'sft.pt'}")
    return 0
