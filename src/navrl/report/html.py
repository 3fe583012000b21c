"""``navrl report RUN_DIR``: one self-contained HTML page (images inlined as base64).

Learning curves (matplotlib), the latest evaluation table, and filmstrips of a success
and a failure trajectory with tap/swipe marks. Opens in a browser without a server.
"""
from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from navrl.fileio import atomic_write_text  # noqa: E402
from navrl.rl.metrics import MetricsError, read_metrics  # noqa: E402


class ReportError(ValueError):
    """The run directory has nothing to report."""


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _img_b64(image) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def learning_curves(updates: list[dict], evals: list[dict]):
    keys = [("success", "train success (rollouts)"), ("mean_return", "mean return"),
            ("episode_length", "episode length"), ("critic/loss", "critic loss"),
            ("critic/explained_variance", "explained variance"), ("policy/approx_kl", "approx KL")]
    from matplotlib.ticker import MaxNLocator
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5))
    axes = axes.ravel()
    for ax in axes:   # updates are whole numbers
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    x = [u["update"] for u in updates]
    for ax, (k, title) in zip(axes, keys):
        ys = [u.get(k) for u in updates]
        pts = [(a, b) for a, b in zip(x, ys) if isinstance(b, (int, float))]
        if pts:
            ax.plot(*zip(*pts), marker=".", lw=1.2)
        else:
            _absent(ax, panel_absent_reason(k, updates))
        ax.set_title(title)
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
    ax = axes[6]
    suites = sorted({k for e in evals for k, v in e.items() if isinstance(v, dict) and "success" in v})
    plotted = 0
    for s in suites:
        pts = [(e["update"], 100 * e[s]["success"]) for e in evals
               if isinstance(e.get(s), dict) and isinstance(e[s].get("success"), (int, float))]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=s)
            plotted += 1
    ax.set_title("evaluation success (%)")
    ax.set_xlabel("update")
    ax.grid(alpha=0.3)
    if plotted:
        ax.legend(fontsize=8)
    else:
        _absent(ax, "no evaluation logged")
    ax = axes[7]
    mf = [(u["update"], u.get("masked_fraction", 0)) for u in updates]
    if mf:
        ax.plot(*zip(*mf), marker=".")
    ax.set_title("masked fraction (infrastructure)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def diagnostics_curves(updates: list[dict]):
    """The exploration diagnostics each update logs under ``diag`` (navrl.rl.diagnostics), or
    None when no update has them (runs of earlier versions): entropy per decision factor, the
    share of task groups whose rollouts all ended alike, the share of steps with a zero
    advantage (and, where exploration mixed, of sampled tokens whose behaviour ratio starts
    outside PPO's clip range), and training success per task family."""
    rows = [(u["update"], u["diag"]) for u in updates if isinstance(u.get("diag"), dict)]
    if not rows:
        return None
    from matplotlib.ticker import MaxNLocator
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.4))
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)

    def lines(ax, key: str, title: str) -> None:
        names = sorted({k for _, d in rows for k in (d.get(key) or {})})
        for name in names:
            pts = [(x, d[key][name]) for x, d in rows if isinstance((d.get(key) or {}).get(name), (int, float))]
            if pts:
                ax.plot(*zip(*pts), marker=".", lw=1.2, label=name)
        if names:
            ax.legend(fontsize=8)
        else:
            _absent(ax, "not measured (run.diagnostics_samples 0)" if key == "entropy" else "not logged")
        ax.set_title(title)

    lines(axes[0], "entropy", "entropy per decision factor (nats)")
    for ax, key, title in ((axes[1], "zero_variance_groups", "groups whose rollouts all ended alike"),
                           (axes[2], "zero_advantage_steps", "steps with a zero advantage")):
        pts = [(x, d[key]) for x, d in rows if isinstance(d.get(key), (int, float))]
        if pts:
            ax.plot(*zip(*pts), marker=".", lw=1.2)
            ax.set_ylim(-0.02, 1.02)
        else:
            _absent(ax, "no group of two valid rollouts" if key == "zero_variance_groups" else "no valid step")
        ax.set_title(title + " (share)")
    gap = [(x, d["behaviour_gap"]["outside_clip"]) for x, d in rows if isinstance(d.get("behaviour_gap"), dict)]
    if gap:    # exploring rollouts: tokens that start the update outside the clip range against mu
        axes[2].plot(*zip(*gap), marker=".", lw=1.2, label="tokens with pi_old/mu outside the clip")
        axes[2].legend(fontsize=8)
    lines(axes[3], "success_by_family", "training success per task family")
    fig.tight_layout()
    return fig


def _absent(ax, why: str) -> None:
    ax.text(0.5, 0.5, why, ha="center", va="center", wrap=True, fontsize=9, color="#555", transform=ax.transAxes)


def panel_absent_reason(key: str, updates: list[dict]) -> str:
    """Why a learning-curve panel has no points (shown in the panel and listed in the page)."""
    if not updates:
        return "no update logged yet"
    if key.startswith("critic/"):
        return "no critic: this run's estimator is critic-free (grpo, gigpo)"
    if key == "policy/approx_kl" and all(u.get("policy_frozen") for u in updates):
        return "policy not updated yet: every update so far was critic warm-up"
    if key == "success" and all(u.get("success") is None for u in updates):
        return "every rollout masked (infrastructure)"
    return "not logged by this run"


def summary_table(path: Path) -> str:
    """The SFT -> RL summary of ``navrl demo`` (summary.json) as an HTML table: per suite SFT
    and RL success, the paired difference and its 95% interval."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return "<h2>Summary</h2><p>summary.json is unreadable</p>"
    if not isinstance(data, dict):
        return "<h2>Summary</h2><p>summary.json is not an object</p>"
    prov = data.get("provenance")
    prov_html = ("<p>provenance: " + html.escape(", ".join(f"{k} {v}" for k, v in prov.items())) + "</p>"
                 if isinstance(prov, dict) else "")
    rows = []
    for suite, v in data.items():
        if not isinstance(v, dict) or "sft" not in v:
            continue
        lo, hi = (v.get("gain_ci_points") or [float("nan"), float("nan")])[:2]
        rows.append(f"<tr><td>{html.escape(str(suite))}</td><td>{100 * v['sft']:.1f}%</td><td>{100 * v['rl']:.1f}%</td>"
                    f"<td>{v['gain_points']:+.1f}</td><td>{lo:+.1f} to {hi:+.1f}</td><td>{v.get('episodes', '')}</td></tr>")
    extra = "".join(f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in data.items()
                    if not isinstance(v, dict))
    if not rows:   # a navrl train run: its final evaluation is the table below
        return ("<h2>Summary</h2><p class='absent'>No SFT-vs-RL table: this run was made by <code>navrl train</code>, "
                "which does not evaluate a policy before RL (<code>navrl demo</code> does).</p>"
                + (f"<ul>{extra}</ul>" if extra else "") + prov_html)
    return prov_html + ("<h2>Summary: SFT vs RL on the same evaluation tasks</h2><table><tr><th>suite</th><th>SFT</th><th>RL</th>"
            "<th>RL - SFT (points)</th><th>95% CI (paired)</th><th>episodes</th></tr>" + "".join(rows) + "</table>"
            + (f"<ul>{extra}</ul>" if extra else ""))


def build_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    run = Path(run_dir)
    if not run.is_dir():
        raise ReportError(f"no such run directory: {run}")
    try:
        recs = read_metrics(run)
    except MetricsError as e:
        raise ReportError(str(e)) from None
    updates = [r for r in recs if r.get("kind") == "update"]
    evals = [r for r in recs if r.get("kind") == "eval"]
    if not recs:
        raise ReportError(f"{run} has no metrics.jsonl records")
    parts = [f"<h1>navrl run: {html.escape(run.name)}</h1>"]
    summary = run / "summary.json"
    if summary.exists():
        parts.append(summary_table(summary))
    if evals:
        last = evals[-1]
        rows = "".join(_eval_row(s, v) for s, v in last.items() if isinstance(v, dict) and "success" in v)
        parts.append(f"<h2>Latest evaluation (after update {last['update']})</h2><table><tr><th>suite</th>"
                     f"<th>success</th><th>k/n</th><th>95% CI</th><th>mean length</th><th>masked</th></tr>{rows}</table>")
    else:
        parts.append("<h2>Evaluation</h2><p class='absent'>No evaluation logged: the run stopped before its "
                     "final evaluation (<code>navrl eval --policy RUN</code> evaluates it).</p>")
    parts.append(f'<h2>Learning curves</h2><img src="data:image/png;base64,{_png(learning_curves(updates, evals))}">')
    diag = diagnostics_curves(updates)
    if diag is not None:
        parts.append("<h2>Exploration diagnostics</h2><p>What each update had to learn from: a group whose "
                     "rollouts all ended alike carries no group-relative advantage, a zero-advantage step moves "
                     f'nothing, a collapsed factor is explored no more.</p><img src="data:image/png;base64,{_png(diag)}">')
    else:
        parts.append("<h2>Exploration diagnostics</h2><p class='absent'>Not logged by this run (updates record "
                     "<code>diag</code> since 2026-12-05).</p>")
    keys = ("critic/loss", "critic/explained_variance", "policy/approx_kl", "success")
    gaps = {k: panel_absent_reason(k, updates) for k in keys
            if not any(isinstance(u.get(k), (int, float)) for u in updates)}
    if gaps:
        parts.append("<ul class='absent'>" + "".join(f"<li>{html.escape(k)}: {html.escape(why)}</li>"
                                                     for k, why in gaps.items()) + "</ul>")
    strips = 0
    for kind, title in (("success", "A success"), ("failure", "A failure")):
        fs = run / "filmstrips" / f"{kind}.png"
        if fs.exists():
            strips += 1
            b64 = base64.b64encode(fs.read_bytes()).decode()
            parts.append(f'<h2>{title}</h2><img class="filmstrip" style="max-width:100%" '
                         f'src="data:image/png;base64,{b64}">')
        else:
            parts.append(f"<h2>{title}</h2><p class='absent'>No filmstrip: {_no_strip(kind, evals)}</p>")
    style = ("body{font-family:sans-serif;margin:24px;max-width:1400px} table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 10px} img{max-width:100%}")
    page = f"<!doctype html><html><head><meta charset='utf-8'><title>navrl report</title><style>{style}</style></head><body>{''.join(parts)}</body></html>"
    path = Path(out) if out else run / "report.html"
    try:
        atomic_write_text(path, page)
    except OSError as e:
        raise ReportError(f"cannot write {path}: {e.strerror or e}") from None
    return path


def _no_strip(kind: str, evals: list[dict]) -> str:
    """Why RUN/filmstrips/KIND.png is absent."""
    if not evals:
        return "no evaluation recorded frames (the run stopped before its final evaluation)"
    last = evals[-1]
    res = [v for v in last.values() if isinstance(v, dict) and "successes" in v]
    if kind == "success" and res and all(v.get("successes") == 0 for v in res):
        return "the final evaluation had no successful episode"
    if kind == "failure" and res and all(v.get("successes") == v.get("n") for v in res):
        return "the final evaluation had no failed episode"
    return ("this run's evaluation recorded no frames (navrl train and navrl demo write filmstrips for the phone "
            "world's suites; other worlds and devices may send no screenshots)")


def _eval_row(suite: str, v: dict) -> str:
    """One evaluation table row; a suite whose every episode was masked says so (no 0%)."""
    try:
        if v.get("success") is None:
            return (f"<tr><td>{html.escape(suite)}</td><td colspan='4'>no valid episodes: all "
                    f"{int(v.get('masked', 0))} masked (infrastructure)</td><td>{int(v.get('masked', 0))}</td></tr>")
        return (f"<tr><td>{html.escape(suite)}</td><td>{100 * v['success']:.1f}%</td><td>{v['successes']}/{v['n']}</td>"
                f"<td>{100 * v['ci_low']:.1f}-{100 * v['ci_high']:.1f}</td><td>{v['mean_length']:.1f}</td>"
                f"<td>{v['masked']}</td></tr>")
    except (KeyError, TypeError, ValueError) as e:
        raise ReportError(f"evaluation record of {suite!r} is malformed ({type(e).__name__}: {e})") from None
