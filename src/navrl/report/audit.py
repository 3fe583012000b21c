"""``audit.html``: one self-contained page for ``navrl judge audit`` (images inlined as PNG data URIs).

The summary per verdict kind (accuracy, Cohen's kappa, false-positive and false-negative rates
with their 95% intervals, leniency, false successes on failed episodes), the confusion matrices,
cost and latency per verdict, and the worst disagreements with the screens before and after
the step (a tap or swipe marked on the before-screen). Reads the ``audit.json`` record and the
disagreements' screens; knows nothing of how they were measured.
"""
from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any, Sequence

from navrl.fileio import atomic_write_text

__all__ = ["audit_page", "write_audit_page"]

_STYLE = ("body{font-family:sans-serif;margin:24px;max-width:1400px} table{border-collapse:collapse;margin:8px 0}"
          "td,th{border:1px solid #ccc;padding:4px 10px;text-align:right} th:first-child,td:first-child{text-align:left}"
          ".diag{background:#e8f5e9} .off{background:#fdecea} .disagreement{border:1px solid #ccc;padding:8px 12px;"
          "margin:12px 0} .shots img{max-height:420px;margin-right:12px;border:1px solid #999} .muted{color:#666}")


def _e(x: Any) -> str:
    return html.escape(str(x))


def _pct(r: dict | None) -> str:
    """A rate block (``rate``, ``k``, ``n``, ``ci95``) as '12.3% (4/32) [5.1-27.0]'."""
    if not r or r.get("rate") is None:
        return "<span class='muted'>n/a</span>"
    lo, hi = r["ci95"]
    return f"{100 * r['rate']:.1f}% ({r['k']}/{r['n']}) <span class='muted'>[{100 * lo:.1f}-{100 * hi:.1f}]</span>"


def _num(x: float | None, fmt: str = ".3f") -> str:
    return "<span class='muted'>n/a</span>" if x is None else format(x, fmt)


def _summary_table(a: dict) -> str:
    rows = []
    for kind in ("step", "ask", "terminal"):
        b = a.get(kind) or {}
        extra = ""
        if kind == "step":
            extra = "lenient on plausible failed steps: " + _pct(b.get("lenient"))
        elif kind == "terminal":
            extra = (f"false success on failed episodes: {_pct(b.get('false_success_failed_episodes'))}; "
                     f"{b.get('undeclared', 0)} episodes not declared complete (fail without a look)")
        rows.append(f"<tr><td>{kind}</td><td>{b.get('n', 0)}</td><td>{_pct(b.get('accuracy'))}</td>"
                    f"<td>{_num(b.get('kappa'))}</td><td>{_pct(b.get('false_positive'))}</td>"
                    f"<td>{_pct(b.get('false_negative'))}</td><td>{b.get('unavailable', 0)}</td>"
                    f"<td style='text-align:left'>{extra}</td></tr>")
    return ("<h2>Verdicts against the exact judge</h2><table><tr><th>verdict</th><th>compared</th><th>accuracy</th>"
            "<th>Cohen's kappa</th><th>false positive</th><th>false negative</th><th>unavailable</th><th></th></tr>"
            + "".join(rows) + "</table><p class='muted'>Rates with their 95% Wilson intervals. Positive: step "
            "success, ask justified, terminal success. Terminal verdicts are compared on episodes that declared "
            "completion.</p>")


def _matrix(kind: str, b: dict) -> str:
    labels = b.get("labels") or []
    m = b.get("matrix") or {}
    head = "".join(f"<th>judged {_e(v)}</th>" for v in labels)
    body = "".join(
        f"<tr><td>exact {_e(e)}</td>"
        + "".join(f"<td class='{'diag' if e == v else 'off' if m.get(e, {}).get(v) else ''}'>{m.get(e, {}).get(v, 0)}"
                  "</td>" for v in labels) + "</tr>" for e in labels)
    return f"<h3>{kind}</h3><table><tr><th></th>{head}</tr>{body}</table>"


def _cost(a: dict) -> str:
    c, lat = a.get("cost") or {}, a.get("latency_s") or {}
    usd = c.get("usd")
    money = (f"${usd:.4f} (${c['usd_per_verdict']:.6f} per verdict)" if usd is not None and c.get("usd_per_verdict")
             is not None else f"${usd:.4f}" if usd is not None
             else f"unknown: no price for {_e(', '.join(c.get('unpriced_models') or []))} (NAVRL_API_PRICES)")
    rows = "".join(f"<tr><td>{k}</td><td>{v.get('n', 0)}</td><td>{_num(v.get('mean'))}</td><td>{_num(v.get('p50'))}</td>"
                   f"<td>{_num(v.get('p95'))}</td><td>{_num(v.get('max'))}</td></tr>" for k, v in lat.items())
    tpv = c.get("tokens_per_verdict")
    return (f"<h2>Cost and latency</h2><p>models: {_e(', '.join(c.get('models') or []) or 'none (not an API judge)')}; "
            f"tokens: {c.get('prompt_tokens', 0)} prompt + {c.get('completion_tokens', 0)} completion"
            f"{f' ({tpv:.0f} per verdict)' if tpv is not None else ''}; {c.get('cached', 0)} replies from the cache; "
            f"cost {money}</p><table><tr><th>latency (s, uncached)</th><th>n</th><th>mean</th><th>p50</th><th>p95</th>"
            f"<th>max</th></tr>{rows}</table>")


def _data_uri(png: bytes | None, action: str | None = None) -> str | None:
    if png is None:
        return None
    if action:
        try:
            from PIL import Image

            from navrl.actions import Action
            from navrl.report.filmstrip import mark_action
            img = mark_action(Image.open(io.BytesIO(png)), Action.from_text(action))
            buf = io.BytesIO()
            img.save(buf, format="PNG")
            png = buf.getvalue()
        except (ValueError, OSError):
            pass   # an action without a mark (or that does not parse): the plain screen
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _disagreement(i: int, d: Any) -> str:
    p = d.pair
    where = "final screens" if p.kind == "terminal" else f"step {p.t}"
    shots = []
    labels = {"step": ("before", "after"), "ask": ("", "screen"), "terminal": ("previous screen", "final screen")}
    for label, png, act in ((labels[p.kind][0], d.before_png, p.action if p.kind == "step" else None),
                            (labels[p.kind][1], d.after_png, None)):
        uri = _data_uri(png, act)
        if uri is not None:
            shots.append(f"<figure style='display:inline-block;margin:0'><img alt='{label}' src='{uri}'>"
                         f"<figcaption>{label}</figcaption></figure>")
    lines = [f"<b>{i}. {_e(p.kind)} verdict, {where} of {_e(p.task)}</b>: exact <b>{_e(p.exact)}</b>, "
             f"judged <b>{_e(p.judged)}</b> (moves the reward by {p.severity:g})"]
    if p.step:
        lines.append(f"{'answer' if p.kind == 'terminal' else 'step'}: {_e(p.step)}")
    if p.action:
        lines.append(f"action: <code>{_e(p.action)}</code>")
    if p.plausible:
        lines.append("a plausible-looking failed step (back to a screen already seen)")
    lines.append(f"judge's reason: {_e(p.reason) or '-'}")
    lines.append(f"exact judge's reason: {_e(p.exact_reason) or '-'}")
    return (f"<div class='disagreement'>{'<br>'.join(lines)}<div class='shots'>{''.join(shots)}</div></div>")


def audit_page(audit: dict, worst: Sequence[Any]) -> str:
    """The page for one ``audit.json`` record and its worst disagreements
    (:class:`navrl.eval.audit.Disagreement`-like: ``pair``, ``before_png``, ``after_png``)."""
    v, ep = audit.get("verdicts") or {}, audit.get("episodes") or {}
    title = f"Judge audit: {audit.get('judge', '?')} against {audit.get('reference', '?')} on {audit.get('suite', '?')}"
    parts = [f"<h1>{_e(title)}</h1>",
             f"<p>planner {_e(audit.get('planner', '?'))}; {ep.get('n', 0)} episodes ({ep.get('valid', 0)} valid, "
             f"exact success {_pct(ep.get('exact_success'))}); {v.get('asked', 0)} verdicts asked, "
             f"{v.get('answered', 0)} answered, {v.get('unavailable', 0)} unavailable, "
             f"{v.get('disagreements', 0)} disagreements; {audit.get('elapsed_s', 0):.0f} s</p>",
             _summary_table(audit),
             "<h2>Confusion matrices</h2><p class='muted'>Rows: the exact judge; columns: the judge under audit.</p>",
             *(_matrix(k, audit.get(k) or {}) for k in ("step", "ask", "terminal")),
             _cost(audit),
             f"<section id='disagreements'><h2>The {len(worst)} worst disagreements</h2>"
             "<p class='muted'>Most reward moved first (default reward table), terminal verdicts before steps before "
             "questions.</p>" + "".join(_disagreement(i, d) for i, d in enumerate(worst, 1))
             + ("" if worst else "<p>None: the judges agreed on every verdict.</p>") + "</section>"]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{_STYLE}</style>"
            f"</head><body>{''.join(parts)}</body></html>")


def write_audit_page(path: str | Path, audit: dict, worst: Sequence[Any]) -> Path:
    """Write :func:`audit_page` atomically."""
    return atomic_write_text(path, audit_page(audit, worst))
