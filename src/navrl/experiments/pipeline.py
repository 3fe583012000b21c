"""The main job's stages as functions the CLI (and the paper-table experiment) call:
build the tiny planner, SFT it, train it online, evaluate, save filmstrips."""
from __future__ import annotations

import io
import json
from pathlib import Path

import torch

from navrl.agent.policy.base import Policy
from navrl.agent.policy.tiny import TinyPlanner
from navrl.agent.policy.tokenizer import corpus_and_labels, train_tokenizer
from navrl.fileio import atomic_write_bytes, atomic_write_text, save_image
from navrl.rl.presets import Preset
from navrl.rl.sft import NoDemonstrations, SFTResult, TemplateTeacher, Teacher, collect_demonstrations, train_sft
from navrl.rl.trainer import CheckpointError, load_checkpoint_file


def build_tiny_policy(preset: Preset, seed: int = 0) -> TinyPlanner:
    texts, labels = corpus_and_labels(preset.tokenizer_tasks, seed)
    tok = train_tokenizer(texts, labels=labels)
    return TinyPlanner(tok, preset.tiny, seed=seed)


def build_policy(preset: Preset, seed: int = 0, world: str = "phone") -> Policy:
    """A fresh CPU planner of the preset's kind: the pointer planner (its vocabulary the
    ``world``'s ``vocabulary`` hook: the phone world's UI words, the web world's adds MiniWoB++'s
    goal words) or the tiny text LM."""
    if preset.planner == "pointer":
        from navrl.agent.policy.pointer import PointerPlanner
        from navrl.tasks.registry import get_world
        w = get_world(world)
        # a world without a vocabulary of its own: the phone world's UI words
        vocabulary = (w if "vocabulary" in w.hooks else get_world("phone")).hook("vocabulary")
        return PointerPlanner(vocabulary(), preset.pointer, seed=seed)
    return build_tiny_policy(preset, seed)


def run_sft(preset: Preset, out_dir: str | Path, teacher: Teacher | None = None, seed: int = 0,
            progress=None, collect=None, world: str = "phone") -> tuple[Policy, SFTResult]:
    """Tokenizer, demonstrations, SFT; writes ``out_dir/sft.pt`` and ``sft.json``.

    ``collect(policy, teacher) -> demos`` replaces the phone world's demonstrations (e.g.
    MiniWoB++'s scripted solutions: ``navrl sft --suite miniwob``)."""
    torch.set_num_threads(preset.train.run.torch_threads)
    out = Path(out_dir)
    policy = build_policy(preset, seed, world)
    teacher = teacher or TemplateTeacher(compact=True)
    demos = (collect(policy, teacher) if collect is not None
             else collect_demonstrations(policy, preset.sft.n_tasks, teacher, seed=seed))
    if not demos:
        raise NoDemonstrations("no demonstrations: the expert succeeded on none of the tasks")
    res = train_sft(policy, demos, preset.sft, progress)
    save_policy(policy, out / "sft.pt", {"stage": "sft", "preset": preset.name})
    atomic_write_text(out / "sft.json", json.dumps({
        "demonstrations": len(demos), "heldout_loss_before": res.heldout_before,
        "heldout_loss_after": res.heldout_after, "heldout_losses": res.heldout_losses,
        "seconds": res.seconds, "params": policy.n_params(), "planner": preset.planner,
        "dropped_demonstration_steps": res.n_dropped}, indent=2))
    return policy, res


def save_policy(policy: Policy, path: str | Path, meta: dict | None = None) -> Path:
    buf = io.BytesIO()
    torch.save({"format": "navrl-policy-1", "kind": type(policy).__name__, "policy": policy.state_dict_all(),
                "meta": meta or {}}, buf)
    return atomic_write_bytes(path, buf.getvalue())


def load_policy(path: str | Path) -> Policy:
    """A policy from ``sft.pt`` (navrl-policy-1) or a trainer checkpoint (run dir or .pt)."""
    p = Path(path)
    if p.is_file() and p.suffix == ".pt":
        try:
            st = torch.load(p, map_location="cpu", weights_only=False)
        except Exception as e:
            raise CheckpointError(f"{p} is unreadable ({type(e).__name__})") from None
        if isinstance(st, dict) and st.get("format") == "navrl-policy-1":
            return _policy_from_state(st.get("kind"), st["policy"], p)
        if isinstance(st, dict) and st.get("format") == "navrl-checkpoint-1":
            return _policy_from_state(st.get("policy_kind"), st["policy"], p)
        raise CheckpointError(f"{p} is not a navrl policy or checkpoint")
    st = load_checkpoint_file(p)
    return _policy_from_state(st.get("policy_kind"), st["policy"], p)


def _policy_from_state(kind: str | None, state: dict, path: Path):
    """The policy ``state`` describes; weights that do not fit this navrl's model (a planner
    saved by another version, with another input layout) are a :class:`CheckpointError`
    naming the first tensor that differs, not torch's traceback."""
    from navrl.agent.policy.pointer.features import LayoutMismatch
    try:
        return _build_policy(kind, state)
    except LayoutMismatch as e:
        raise CheckpointError(f"{path} was saved by another version of the {kind or 'policy'} than this navrl's "
                              f"({e}); retrain it, or load it with the navrl commit that wrote it") from None
    except RuntimeError as e:
        lines = [ln.strip() for ln in str(e).splitlines()]
        diff = next((ln for ln in lines if ln.startswith(("size mismatch", "Missing key", "Unexpected key"))), None)
        if diff is None:
            raise
        raise CheckpointError(f"{path} was saved by another version of the {kind or 'policy'} than this navrl's "
                              f"({diff.rstrip('.')}); retrain it, or load it with the navrl commit that wrote it") from None


def _build_policy(kind: str | None, state: dict):
    if kind == "HFPlanner":
        from navrl.agent.policy.hf import HFPlanner
        return HFPlanner.from_state(state)
    if kind == "PointerPlanner":
        from navrl.agent.policy.pointer import PointerPlanner
        return PointerPlanner.from_state(state)
    return TinyPlanner.from_state(state)


def save_filmstrips(trajs, run_dir: str | Path) -> dict[str, Path]:
    """A success and a failure (with frames) as filmstrip PNGs under ``run_dir/filmstrips``."""
    from navrl.report.filmstrip import trajectory_filmstrip
    out = {}
    for kind, pick in (("success", lambda t: t.success), ("failure", lambda t: t.valid and not t.success)):
        t = next((t for t in trajs if pick(t) and t.frames), None)
        if t is not None:
            title = f"{kind}: {t.task['goal']} - {t.terminal_verdict}, return {t.total_reward:+.2f}"
            out[kind] = save_image(Path(run_dir) / "filmstrips" / f"{kind}.png", trajectory_filmstrip(t, title))
    return out
