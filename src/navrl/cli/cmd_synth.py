"""``navrl synth-tasks``: teacher-LLM task synthesis with a human review step.

    navrl synth-tasks generate --out tasks.jsonl [--overwrite] [--pairs 5] [--per-pair 3] [--apps Weather,Calendar,...]
    navrl synth-tasks review tasks.jsonl [--accept-all | --accept 1,3,5-7] [--reject 2,4]
    navrl synth-tasks export tasks.jsonl --out suite.json

``generate`` calls the teacher on the endpoint of NAVRL_API_BASE / NAVRL_API_MODEL (or
``--base-url`` / ``--model``); ``review`` without flags asks y/n for every unreviewed
line; ``export`` writes only accepted tasks. These tasks are judged by the LLM judges.
"""
from __future__ import annotations

import sys
from pathlib import Path

from navrl.cli.common import CLIError


def register(sub) -> None:
    s = sub.add_parser("synth-tasks", help="synthesize multi-app tasks with a teacher LLM, review, export")
    ss = s.add_subparsers(dest="synth_cmd", required=True)
    g = ss.add_parser("generate", help="teacher proposes app pairs, then writes tasks into a review file")
    g.add_argument("--out", required=True, help="review file to write (JSONL)")
    g.add_argument("--pairs", type=int, default=5, help="app pairs to ask for (default 5)")
    g.add_argument("--per-pair", type=int, default=3, help="tasks per pair (default 3)")
    g.add_argument("--apps", default=None, help="comma-separated app names to choose from (default: all)")
    g.add_argument("--model", default=None, help="teacher model (default $NAVRL_API_MODEL)")
    g.add_argument("--base-url", default=None, help="endpoint (default $NAVRL_API_BASE)")
    g.add_argument("--timeout", type=float, default=None, help="seconds per request (default 60)")
    g.add_argument("--max-retries", type=int, default=None, help="retries on timeouts, 429 and 5xx (default 4)")
    g.add_argument("--strict", action="store_true", help="write nothing if any teacher output is malformed")
    g.add_argument("--overwrite", action="store_true", help="replace an existing review file (and its reviews)")
    g.add_argument("--force", action="store_true", help="deprecated: --overwrite")
    g.set_defaults(fn=run_generate)
    r = ss.add_parser("review", help="accept or reject each task of a review file")
    r.add_argument("file")
    r.add_argument("--accept-all", action="store_true", help="accept every line (except --reject ones)")
    r.add_argument("--accept", default=None, metavar="IDS", help="accept these ids, e.g. 1,3,5-7")
    r.add_argument("--reject", default=None, metavar="IDS", help="reject these ids")
    r.add_argument("--all", action="store_true", help="interactive: also ask about lines already decided")
    r.set_defaults(fn=run_review)
    e = ss.add_parser("export", help="write the accepted tasks into a suite file")
    e.add_argument("file")
    e.add_argument("--out", required=True, help="suite file to write (JSON)")
    e.add_argument("--name", default=None, help="suite name (default: the output file's stem)")
    e.set_defaults(fn=run_export)


def run_generate(args) -> int:
    from navrl.api import APIConfig, APIError, ChatClient
    synth = _synth()
    SynthError, synthesize, write_review = synth.SynthError, synth.synthesize, synth.write_review
    out = Path(args.out)
    if args.force:
        sys.stderr.write("navrl: note: --force is deprecated: use --overwrite, as every other command does\n")
    if out.exists() and not (args.overwrite or args.force):
        raise CLIError(f"{out} exists (it may hold reviews): use --overwrite to replace it")
    if args.pairs < 1 or args.per_pair < 1:
        raise CLIError("--pairs and --per-pair must be >= 1")
    apps = [a.strip() for a in args.apps.split(",") if a.strip()] if args.apps else None
    try:
        client = ChatClient(APIConfig.from_env(model=args.model, base_url=args.base_url, timeout=args.timeout,
                                               max_retries=args.max_retries))
    except ValueError as e:
        raise CLIError(str(e)) from None
    try:
        res = synthesize(client, args.pairs, args.per_pair, apps=apps, strict=args.strict)
    except SynthError as e:
        raise CLIError(str(e)) from None
    except APIError as e:
        raise CLIError(f"teacher unavailable: {e}") from None
    for p in res.problems:
        sys.stderr.write(f"navrl: skipped malformed teacher output: {p}\n")
    write_review(out, res.tasks)
    pairs = ", ".join(" + ".join(p.apps) for p in res.pairs)
    print(f"{len(res.tasks)} tasks from {len(res.pairs)} app pairs ({pairs}); {len(res.problems)} problems; "
          f"cost ${res.cost:.4f}")
    print(f"review them: navrl synth-tasks review {out}")
    return 0


def run_review(args) -> int:
    synth = _synth()
    SynthError, apply_decisions, parse_ids = synth.SynthError, synth.apply_decisions, synth.parse_ids
    read_review, write_review = synth.read_review, synth.write_review
    try:
        tasks = read_review(args.file)
        accept = parse_ids(args.accept) if args.accept else set()
        reject = parse_ids(args.reject) if args.reject else set()
        if args.accept_all or accept or reject:
            n = apply_decisions(tasks, accept, reject, args.accept_all)
            write_review(args.file, tasks)
            _summary(tasks, f"{n} lines changed")
            return 0
    except SynthError as e:
        raise CLIError(str(e)) from None
    if not sys.stdin.isatty():
        raise CLIError("review is interactive: run it in a terminal, or use --accept-all / --accept IDS")
    todo = [t for t in tasks if args.all or t.accepted is None]
    changed = 0
    try:
        for i, t in enumerate(todo, 1):
            print(f"\n[{i}/{len(todo)}] id {t.id}  apps: {', '.join(t.apps)}"
                  + ("" if t.accepted is None else f"  (now: {'accepted' if t.accepted else 'rejected'})"))
            print(f"  {t.goal}")
            if t.profile:
                print("  profile: " + "; ".join(f"{k}: {v}" for k, v in t.profile.items()))
            while True:
                try:
                    ans = input("accept? [y]es / [n]o / [s]kip / [q]uit: ").strip().lower()
                except EOFError:
                    ans = "q"
                if ans in ("y", "yes", "n", "no", "s", "skip", "", "q", "quit"):
                    break
            if ans in ("q", "quit"):
                break
            if ans in ("y", "yes", "n", "no"):
                new = ans.startswith("y")
                changed += int(new != t.accepted)
                t.accepted = new
    finally:
        write_review(args.file, tasks)   # decisions so far are kept, even on Ctrl-C
    _summary(tasks, f"{changed} lines changed")
    return 0


def _summary(tasks, what: str) -> None:
    acc = sum(t.accepted is True for t in tasks)
    rej = sum(t.accepted is False for t in tasks)
    print(f"{what}: {acc} accepted, {rej} rejected, {len(tasks) - acc - rej} not reviewed")


def run_export(args) -> int:
    synth = _synth()
    SynthError, export_suite = synth.SynthError, synth.export_suite
    if Path(args.out).resolve() == Path(args.file).resolve():
        raise CLIError("--out must not be the review file")
    try:
        n = export_suite(args.file, args.out, args.name)
    except SynthError as e:
        raise CLIError(str(e)) from None
    print(f"{n} accepted tasks -> {args.out}")
    return 0


def _synth():
    """The phone world's task synthesiser (its ``synth`` hook: the module)."""
    from navrl.tasks.registry import get_world
    return get_world("phone").hook("synth")()
