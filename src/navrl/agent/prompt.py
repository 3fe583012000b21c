"""The planner's input (docs/design.md §3): task goal, current screen, earlier step plans with
their reasoning, the remaining plan written last step, and the user's answers so far.

One builder for every planner backend: text-only planners read the UI tree as text;
vision planners get the same text plus the screenshot as an image.
"""
from __future__ import annotations

from dataclasses import dataclass

from navrl.agent.planner import PlannerContext

SYSTEM = (
    "You are a phone-navigation planner. Decide the ONE thing to do on the current screen.\n"
    "Answer in exactly this format:\n"
    "Reasoning: <why, grounded in what is on screen>\n"
    "Step: <one instruction: Tap \"<label>\" | Tap the <nth> \"<label>\" (e.g. Tap the 2nd \"Delete\": the "
    "second element so labelled, in screen order) | Long press \"<label>\" | Type \"<text>\" | Swipe up|down|left|right "
    "[on \"<label>\"] | Go home | Ask user: <question> | Complete | Complete: <answer>>\n"
    "Remaining: <high-level goals still needed>"
)


@dataclass(frozen=True)
class PromptConfig:
    max_history: int = 8
    """Earlier steps shown (most recent last); older ones are summarised by count."""
    max_ui_lines: int = 60
    """UI-tree lines shown; long lists are cut."""
    include_reasoning: bool = True
    """Show the reasoning of earlier steps, not only their step text."""
    compact: bool = False
    """Compact screen text (labels only, headers marked with #, values after a colon): the
    tiny planner's format, about a third of the tokens of the full UI tree."""


def compact_ui(obs) -> list[str]:
    lines = [f"app: {obs.app or 'Home screen'}"]
    seen = set()
    for n in obs.nodes:
        if not n.label:
            continue
        line = ("# " if n.role == "header" else "") + n.label
        if n.value and n.value not in ("off", "on", "selected"):
            line += f": {n.value}"
        elif n.value:
            line += f" ({n.value})"
        if n.focused:
            line += " (focused)"
        if line not in seen:
            seen.add(line)
            lines.append(line)
    return lines


def build_prompt(ctx: PlannerContext, cfg: PromptConfig = PromptConfig()) -> str:
    """The user-turn text for ``ctx`` (the system text is :data:`SYSTEM`)."""
    lines = [f"Task: {ctx.task.goal}"]
    if ctx.answers:
        lines.append("User answers:")
        lines += [f"- Q: {q} A: {a}" for q, a in ctx.answers]
    hist = ctx.history[-cfg.max_history:]
    skipped = len(ctx.history) - len(hist)
    if ctx.history:
        lines.append("Previous steps:" + (f" ({skipped} earlier steps not shown)" if skipped else ""))
        for i, (reasoning, step) in enumerate(hist, skipped + 1):
            if cfg.include_reasoning and reasoning:
                lines.append(f"{i}. {step} (because: {reasoning})")
            else:
                lines.append(f"{i}. {step}")
    if ctx.remaining:
        lines.append(f"Remaining plan: {ctx.remaining}")
    ui = compact_ui(ctx.obs) if cfg.compact else ctx.obs.ui_text().split("\n")
    if len(ui) > cfg.max_ui_lines:
        ui = ui[:cfg.max_ui_lines] + [f"... ({len(ui) - cfg.max_ui_lines} more elements)"]
    lines.append("Screen:")
    lines += ui
    return "\n".join(lines)
