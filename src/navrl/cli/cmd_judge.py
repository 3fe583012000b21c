"""``navrl judge audit``: a judge's verdicts against the exact judge's, on the same steps.

    navrl judge audit --judge llm [--judge-model M] --suite test-ios -n 50 --planner mix:0.3 --out runs/audit

A planner plays the suite's tasks (``expert``, ``random``, ``mix:P``: the expert with a random
step with probability P, or a trained planner's checkpoint), scored by the suite's exact judge
(the phone world's oracle); the judge under audit (``--judge llm`` on any OpenAI-compatible
endpoint, ``--judge noisy:...``, or any other) is asked for every step, question and
completion. Writes ``audit.json`` (confusion matrices, accuracy, kappa, error rates with 95%
intervals, cost, latency), ``verdicts.jsonl`` (every pair) and ``audit.html`` (with the worst
disagreements and their screens) — only when the audit finished: an endpoint that is down or
answers garbage ends it with one line and exit code 3, a rejected key with exit code 2, and
nothing is written (docs/judges.md).
"""
from __future__ import annotations

import json
import logging

from navrl.cli.common import CLIError, make_planner, prepare_out_dir
from navrl.cli.parts import add_judge_arguments, add_suite_arguments, eval_tasks, judge_set, parse_suite, resolve_judge

PLANNERS = "expert, random, mix:P (the expert, a random step with probability P) or a checkpoint"


def register(sub) -> None:
    j = sub.add_parser("judge", help="measure a judge: audit its verdicts against the exact judge's")
    js = j.add_subparsers(dest="judge_cmd", required=True)
    a = js.add_parser("audit", help="a planner plays a suite with an exact judge; the judge under audit is asked "
                                    "every verdict too; confusion matrices, kappa, error rates, cost, latency")
    add_judge_arguments(a, default="llm")
    add_suite_arguments(a, "test-ios", "tasks to audit on: a suite with an exact judge (the phone world's train, "
                                       "test-ios, test-android, test-unseen)")
    a.add_argument("-n", "--episodes", type=int, default=50, help="episodes to play (default 50)")
    a.add_argument("--planner", default="mix:0.3", metavar="PLANNER", help=f"{PLANNERS}; default mix:0.3")
    a.add_argument("--seed", type=int, default=0, help="task and planner seed")
    a.add_argument("--batch", type=int, default=16, help="episodes run side by side (default 16)")
    a.add_argument("--max-unavailable", type=float, default=0.05, metavar="F",
                   help="the audit stops (exit 3) when the judge cannot answer more than this fraction of the "
                        "verdicts asked (default 0.05)")
    a.add_argument("--worst", type=int, default=10, help="disagreements shown with their screens (default 10)")
    a.add_argument("--out", default="runs/audit", help="folder for audit.json, verdicts.jsonl, audit.html")
    a.add_argument("--overwrite", action="store_true", help="replace an audit already in OUT")
    a.set_defaults(fn=run_audit_cmd)


def audit_planner(spec: str, seed: int):
    """``--planner``: expert, random, mix:P or a checkpoint path."""
    from pathlib import Path
    if spec in ("expert", "random"):
        return make_planner(spec, seed)
    if spec.startswith("mix:"):
        from navrl.agent.planner import MixedPlanner
        try:
            return MixedPlanner(float(spec[4:]), seed)
        except ValueError:
            raise CLIError(f"--planner {spec}: P must be a probability in [0, 1]") from None
    if Path(spec).exists():
        from navrl.cli.cmd_eval import _policy
        return _policy(spec)
    raise CLIError(f"--planner {spec!r}: use {PLANNERS} (no such file)")


def _exact_suites() -> str:
    from navrl.tasks.registry import suites
    return ", ".join(n for n, s in suites().items() if s.devices[0] == "phone" and s.default_judge("phone") != "llm")


def run_audit_cmd(args) -> int:
    from navrl.cli.progress import bar
    from navrl.eval.audit import pair_records, run_audit
    from navrl.fileio import atomic_write_text
    from navrl.judge.sets import make_judges
    from navrl.report.audit import write_audit_page
    if args.episodes <= 0 or args.batch <= 0:
        raise CLIError("--episodes and --batch must be positive")
    if not 0.0 <= args.max_unavailable <= 1.0:
        raise CLIError("--max-unavailable must be a fraction in [0, 1]")
    if args.worst < 0:
        raise CLIError("--worst must be >= 0")
    sc = parse_suite(args)
    devices = sc.suite.devices[0]
    reference = sc.suite.default_judge(devices)
    if devices != "phone" or reference == "llm":
        raise CLIError(f"--suite {args.suite} has no exact judge on in-process devices to audit against; "
                       f"use one of {_exact_suites()}")
    judge = resolve_judge(args.judge, sc, devices)
    planner = audit_planner(args.planner, args.seed)
    tasks = eval_tasks(sc, args, args.episodes, args.seed)
    audited = judge_set(judge, args)
    exact = make_judges(reference)
    out = prepare_out_dir(args.out, overwrite=args.overwrite)
    clients = list({id(c): c for c in (getattr(x, "client", None) for x in audited[:3]) if c is not None}.values())

    def price_known(model: str) -> bool:
        return any(c.config.prices.known(model) for c in clients)

    api_log = logging.getLogger("navrl.api")
    level = api_log.level
    api_log.setLevel(logging.ERROR)   # the audit counts every failed verdict itself; no warnings across the bar
    counts = {"answered": 0, "disagree": 0, "unavailable": 0}
    try:
        total = sum(t.max_steps for t in tasks)
        with bar(f"auditing {judge.partition(':')[0]} on {args.suite}", total) as advance:
            def on_pair(p) -> None:
                counts["answered" if p.judged is not None else "unavailable"] += 1
                counts["disagree"] += int(p.judged is not None and not p.agrees)

            def step(k: int) -> None:
                advance(k, f"{counts['answered']} verdicts, {counts['disagree']} disagree, "
                           f"{counts['unavailable']} unavailable")
            audit = run_audit(planner, tasks, exact, audited, batch_size=args.batch, progress=step, on_pair=on_pair,
                              max_unavailable=args.max_unavailable, keep=args.worst)
            advance.set_total(sum(t.length for t in audit.trajectories))  # type: ignore[attr-defined]
    finally:
        api_log.setLevel(level)
    def model(j) -> str | None:
        return getattr(getattr(j, "client", None), "model", None)
    meta = {"judge": judge, "judge_model": model(audited.step), "terminal_model": model(audited.terminal),
            "reference": reference, "suite": args.suite, "planner": args.planner, "episodes_asked": args.episodes,
            "seed": args.seed}
    summary = audit.summary(meta, price_known if clients else None)
    # the page and the pairs first: audit.json, the result, appears last and only complete
    write_audit_page(out / "audit.html", summary, audit.worst)
    atomic_write_text(out / "verdicts.jsonl", "".join(json.dumps(r) + "\n" for r in pair_records(audit)))
    atomic_write_text(out / "audit.json", json.dumps(summary, indent=2))
    print(_summary_lines(summary))
    print(f"audit: {out / 'audit.json'}\npage: {out / 'audit.html'}")
    return 0


def _pct(r: dict) -> str:
    if r.get("rate") is None:
        return "n/a"
    lo, hi = r["ci95"]
    return f"{100 * r['rate']:.1f}% ({r['k']}/{r['n']}, 95% CI {100 * lo:.1f}-{100 * hi:.1f})"


def _summary_lines(s: dict) -> str:
    lines = []
    for kind in ("step", "ask", "terminal"):
        b = s[kind]
        k = "n/a" if b["kappa"] is None else f"{b['kappa']:.3f}"
        line = (f"{kind}: {b['n']} compared, accuracy {_pct(b['accuracy'])}, kappa {k}; false positive "
                f"{_pct(b['false_positive'])}, false negative {_pct(b['false_negative'])}")
        if kind == "step":
            line += f"; lenient {_pct(b['lenient'])}"
        if kind == "terminal":
            line += f"; false success on failed episodes {_pct(b['false_success_failed_episodes'])}"
        lines.append(line)
    c, lat = s["cost"], s["latency_s"]["all"]
    usd = "unknown (no price for " + ", ".join(c["unpriced_models"]) + ")" if c["usd"] is None else f"${c['usd']:.4f}"
    mean = "n/a" if lat["mean"] is None else f"{lat['mean']:.3f} s mean, {lat['p95']:.3f} s p95"
    lines.append(f"cost: {c['prompt_tokens'] + c['completion_tokens']} tokens, {usd}; latency per verdict {mean}")
    return "\n".join(lines)
