"""``navrl sft``: reasoning synthesis + supervised warm start of the tiny planner."""
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


def sft_with_progress(preset, out: Path, teacher, seed: int):
    from navrl.cli.progress import bar
    from navrl.experiments.pipeline import run_sft
    total = preset.sft.epochs * 10_000
    with bar("SFT", total) as adv:
        def prog(step: int, tot: int, loss: float) -> None:
            adv.set_total(tot)
            adv(1, f"loss {loss:.3f}")
        return run_sft(preset, out, teacher, seed, prog)


def run(args) -> int:
    from navrl.rl.config import ConfigError
    from navrl.rl.presets import get_preset
    try:
        preset = get_preset(args.preset)
    except ConfigError as e:
        raise CLIError(str(e)) from None
    teacher = make_teacher(args.teacher)
    out = prepare_out_dir(args.out, overwrite=args.overwrite)
    policy, res = sft_with_progress(preset, out, teacher, args.seed)
    print(f"SFT: {res.n_train} train / {res.n_heldout} held-out steps, held-out loss "
          f"{res.heldout_before:.3f} -> {res.heldout_after:.3f} in {res.seconds:.0f} s")
    print(f"policy: {out / 'sft.pt'}")
    return 0
