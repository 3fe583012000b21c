"""SFT vs RL on the same evaluation tasks, broken down by task family, by the perturbations
an episode met (pop-up, consent sheet, loading screen, or none), by single- or multi-app, and
by whether the task's template is one RL and SFT trained on or a held-out one."""
from __future__ import annotations

from collections import defaultdict

from navrl.worlds.phone.sim.world import CONSENT, POPUPS
from navrl.rollout.records import Trajectory
from navrl.worlds.phone.task import TaskError, get_template

_POPUP_WORDS = {p[2] for p in POPUPS}
_CONSENT_WORD = CONSENT[2]


def perturbations(t: Trajectory) -> str:
    """Which interruptions the episode's screens showed: "popup", "consent", "loading" (comma
    separated, sorted), or "none"."""
    seen = set()
    for s in t.steps:
        ui = s.ui_text or ""
        if any(f"] {w}" in ui for w in _POPUP_WORDS) and "[dialog]" in ui:
            seen.add("popup")
        if f"] {_CONSENT_WORD}" in ui:
            seen.add("consent")
        if "] Retry" in ui:
            seen.add("loading")
    return ",".join(sorted(seen)) or "none"


def template_kind(t: Trajectory) -> str:
    """"train template" or "held-out template" (never trained on), with single-/multi-app."""
    try:
        held = get_template(str(t.task.get("template", ""))).heldout
    except TaskError:
        return "unknown template"
    apps = "multi-app" if len(t.task.get("apps", [])) > 1 else "single-app"
    return f"{'held-out' if held else 'train'} template, {apps}"


def _rows(before: list[Trajectory], after: list[Trajectory], key) -> list[tuple[str, int, int, int]]:
    by_id = {t.task["id"]: t for t in after if t.valid}
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for b in before:
        a = by_id.get(b.task["id"])
        if a is None or not b.valid:
            continue
        k = key(b, a)
        acc[k][0] += 1
        acc[k][1] += int(b.success)
        acc[k][2] += int(a.success)
    return [(k, *v) for k, v in sorted(acc.items())]


def breakdown_markdown(before: list[Trajectory], after: list[Trajectory], title: str = "") -> str:
    """Markdown tables: episodes, SFT and RL successes and the difference per task family, per
    perturbation (an episode counts under the perturbations its SFT run met), per single- or
    multi-app task, and per train or held-out template."""
    out = [f"### {title}" if title else ""]
    for name, key in (("task family", lambda b, a: str(b.task.get("family", "?"))),
                      ("perturbations met (SFT episode)", lambda b, a: perturbations(b)),
                      ("apps", lambda b, a: "multi-app" if len(b.task.get("apps", [])) > 1 else "single-app"),
                      ("template", lambda b, a: template_kind(b))):
        out += ["", f"| {name} | episodes | SFT | RL | RL - SFT |", "|---|---|---|---|---|"]
        for k, n, sb, sa in _rows(before, after, key):
            out.append(f"| {k} | {n} | {100 * sb / n:.1f}% ({sb}) | {100 * sa / n:.1f}% ({sa}) | "
                       f"{100 * (sa - sb) / n:+.1f} |")
    return "\n".join(out) + "\n"
