"""Task synthesis with a teacher LLM (the transcript's recipe for multi-app tasks).

1. The teacher proposes sensible app pairs from the apps' names and descriptions
   (``navrl.worlds.phone.sim.apps.all_apps()``), e.g. Weather + Calendar: find a clear day
   to schedule an outdoor event.
2. It writes tasks for each pair into a *review file*: JSONL, one task a line,
   ``{"id": 1, "goal": "...", "apps": ["Weather", "Calendar"], "accepted": null, ...}``.
3. A person accepts or rejects every line (``navrl synth-tasks review``).
4. Accepted tasks are exported into a suite file (``navrl synth-tasks export``), which
   :func:`load_suite` turns into runnable :class:`SynthTaskSpec` instances.

Synthesized tasks have no programmatic check: they are judged by the LLM judges
(:mod:`navrl.judge.llm`). Teacher output is validated; what fails is reported as a
problem and never written (files are written atomically, whole or not at all).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from navrl.api import ChatClient, MalformedReply
from navrl.worlds.phone.sim import FaultConfig, PerturbConfig, PhoneWorld
from navrl.fileio import atomic_write_text
from navrl.worlds.phone.task import Family, TaskError, TaskSpec

T = TypeVar("T")

SUITE_FORMAT = "navrl.synth-suite"
SUITE_VERSION = 1
MAX_GOAL = 500
TEACHER_SYSTEM = ("You design tasks for evaluating and training a phone-navigation agent on a simulated phone. "
                  "You only use the apps listed, by their exact names, and only what those apps can do. "
                  "You always answer with a single JSON object and nothing else.")


class SynthError(TaskError):
    """Bad teacher output, review file or suite file (one line, with the file and line)."""


@dataclass(frozen=True)
class AppPair:
    apps: tuple[str, str]
    reason: str = ""


@dataclass
class SynthTask:
    """One line of a review file."""

    id: int
    goal: str
    apps: list[str]
    accepted: bool | None = None
    profile: dict[str, str] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict:
        return {"id": self.id, "goal": self.goal, "apps": list(self.apps), "accepted": self.accepted,
                "profile": dict(self.profile), "reason": self.reason}


@dataclass
class SynthResult:
    tasks: list[SynthTask]
    pairs: list[AppPair]
    problems: list[str]
    cost: float = 0.0


# ---------------------------------------------------------------------- catalogue
def app_catalog(names: list[str] | None = None) -> list[tuple[str, str]]:
    """(name, description) of the phone world's apps, optionally only ``names`` (case-insensitive)."""
    from navrl.worlds.phone.sim.apps import all_apps
    cat = [(a.name, a.description or a.name) for a in all_apps()]
    if names is None:
        return cat
    by = {n.lower(): (n, d) for n, d in cat}
    out = []
    for n in names:
        if n.strip().lower() not in by:
            raise SynthError(f"unknown app {n!r}; apps: {', '.join(sorted(x for x, _ in cat))}")
        out.append(by[n.strip().lower()])
    if len(out) < 2:
        raise SynthError("task synthesis needs at least two apps")
    return out


def _need_obj(v: Any, key: str) -> list:
    if not isinstance(v, dict) or not isinstance(v.get(key), list):
        raise ValueError(f'the reply must be a JSON object {{"{key}": [...]}}')
    if not v[key]:
        raise ValueError(f'"{key}" is empty')
    return v[key]


def _clean(s: str) -> str:
    return " ".join(str(s).split())


# ---------------------------------------------------------------------- teacher steps
def _ask_teacher(client: ChatClient, prompt: str, key: str, entry: str,
                 check: Callable[[list[dict]], tuple[list[T], list[str]]], what: str, failure: str
                 ) -> tuple[list[T], list[str], float]:
    """One teacher request whose reply is ``{key: [entry objects]}``; ``check`` keeps the
    usable entries and names the problems of the others. Returns (usable, problems, cost).

    A reply with no usable entry counts as malformed: it is re-asked (and never cached);
    if it stays so, SynthError(``failure``: why).
    """
    def validate(v: Any) -> tuple[list[T], list[str]]:
        items = _need_obj(v, key)
        if not all(isinstance(it, dict) for it in items):
            raise ValueError(f'every entry of "{key}" must be an object {entry}')
        usable, problems = check(items)
        if not usable:
            raise ValueError(f"no usable {what}: " + "; ".join(problems[:3]))
        return usable, problems
    try:
        (usable, problems), res = client.chat_json(
            [{"role": "system", "content": TEACHER_SYSTEM}, {"role": "user", "content": prompt}],
            validate, temperature=0.7, max_tokens=2000)
    except MalformedReply as e:
        raise SynthError(f"{failure}: {e}") from None
    return usable, problems, res.cost


def pairs_prompt(catalog: list[tuple[str, str]], n_pairs: int) -> str:
    apps = "\n".join(f"- {n}: {d}" for n, d in catalog)
    return (f"Apps on the phone:\n{apps}\n\n"
            f"Propose {n_pairs} pairs of two different apps that a person would sensibly use together in one "
            "task (for example Weather and Calendar: find a clear day and schedule an outdoor event). "
            "Use the app names exactly as listed.\n"
            'Reply with only JSON: {"pairs": [{"apps": ["<app>", "<app>"], "reason": "<why they go together>"}]}')


def _check_pairs(items: list, catalog: list[tuple[str, str]], n_pairs: int) -> tuple[list[AppPair], list[str]]:
    names = {n.lower(): n for n, _ in catalog}
    pairs: list[AppPair] = []
    problems: list[str] = []
    seen: set[frozenset] = set()
    for i, it in enumerate(items, 1):
        apps = it.get("apps")
        if not (isinstance(apps, list) and len(apps) == 2 and all(isinstance(a, str) for a in apps)):
            problems.append(f"pair {i}: 'apps' must be a list of two app names, got {apps!r:.80}")
            continue
        unknown = [a for a in apps if a.strip().lower() not in names]
        if unknown:
            problems.append(f"pair {i}: unknown app {unknown[0]!r:.40}")
            continue
        a, b = (names[x.strip().lower()] for x in apps)
        if a == b:
            problems.append(f"pair {i}: the same app twice ({a})")
            continue
        if frozenset((a, b)) in seen:
            problems.append(f"pair {i}: duplicate pair {a} + {b}")
            continue
        seen.add(frozenset((a, b)))
        reason = it.get("reason")
        pairs.append(AppPair((a, b), _clean(reason) if isinstance(reason, str) else ""))
        if len(pairs) == n_pairs:
            break
    return pairs, problems


def propose_pairs(client: ChatClient, catalog: list[tuple[str, str]], n_pairs: int) -> tuple[list[AppPair], list[str], float]:
    """Teacher step 1. Returns (pairs, problems, cost).

    A reply with no usable pair counts as malformed: it is re-asked (and never cached);
    if it stays so, SynthError. Single bad entries are skipped and reported as problems.
    """
    return _ask_teacher(client, pairs_prompt(catalog, n_pairs), "pairs", '{"apps": [...], "reason": "..."}',
                        lambda items: _check_pairs(items, catalog, n_pairs), "app pair",
                        "malformed app pairs from the teacher")


def tasks_prompt(pair: AppPair, catalog: list[tuple[str, str]], n_tasks: int) -> str:
    desc = dict(catalog)
    a, b = pair.apps
    return (f"App 1: {a}: {desc.get(a, a)}\nApp 2: {b}: {desc.get(b, b)}\n"
            + (f"Why they go together: {pair.reason}\n" if pair.reason else "")
            + f"\nWrite {n_tasks} different, realistic tasks a person could give a phone assistant that need BOTH "
            "apps. Each goal is one or two concrete sentences, achievable with only what these two apps do. "
            "If a task needs a fact only the user knows, put it in \"profile\" (a short key -> value), "
            "otherwise leave \"profile\" empty.\n"
            'Reply with only JSON: {"tasks": [{"goal": "<task>", "profile": {}}]}')


def _check_tasks(items: list, tag: str, n_tasks: int) -> tuple[list[tuple[str, dict]], list[str]]:
    out: list[tuple[str, dict]] = []
    problems: list[str] = []
    for i, it in enumerate(items, 1):
        goal = it.get("goal")
        if not isinstance(goal, str) or not goal.strip():
            problems.append(f"{tag} task {i}: missing goal")
            continue
        goal = _clean(goal)
        if len(goal) > MAX_GOAL:
            problems.append(f"{tag} task {i}: goal longer than {MAX_GOAL} characters")
            continue
        prof = it.get("profile") or {}
        if not isinstance(prof, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float))
                                                 and not isinstance(v, bool) for k, v in prof.items()):
            problems.append(f"{tag} task {i}: 'profile' must map strings to strings")
            continue
        out.append((goal, {_clean(k): _clean(str(v)) for k, v in prof.items()}))
        if len(out) == n_tasks:
            break
    return out, problems


def write_tasks(client: ChatClient, pair: AppPair, catalog: list[tuple[str, str]], n_tasks: int
                ) -> tuple[list[tuple[str, dict]], list[str], float]:
    """Teacher step 2 for one pair: ([(goal, profile)], problems, cost).

    A reply with no usable task is re-asked; if it stays so, SynthError.
    """
    tag = " + ".join(pair.apps)
    return _ask_teacher(client, tasks_prompt(pair, catalog, n_tasks), "tasks", '{"goal": "...", "profile": {...}}',
                        lambda items: _check_tasks(items, tag, n_tasks), "task",
                        f"malformed tasks from the teacher for {tag}")


def synthesize(client: ChatClient, n_pairs: int = 5, tasks_per_pair: int = 3, apps: list[str] | None = None,
               strict: bool = False) -> SynthResult:
    """Both teacher steps. Bad entries are skipped and reported in ``problems``; with
    ``strict`` any problem raises SynthError instead. API outages raise APIError."""
    if n_pairs < 1 or tasks_per_pair < 1:
        raise SynthError("pairs and tasks per pair must be >= 1")
    catalog = app_catalog(apps)
    pairs, problems, cost = propose_pairs(client, catalog, n_pairs)
    tasks: list[SynthTask] = []
    seen: set[str] = set()
    for pair in pairs:
        try:
            items, probs, c = write_tasks(client, pair, catalog, tasks_per_pair)
        except SynthError as e:
            problems.append(str(e))
            continue
        problems += probs
        cost += c
        for goal, prof in items:
            if goal.lower() in seen:
                problems.append(f"{' + '.join(pair.apps)}: duplicate goal {goal[:60]!r}")
                continue
            seen.add(goal.lower())
            tasks.append(SynthTask(len(tasks) + 1, goal, list(pair.apps), None, prof, pair.reason))
    if strict and problems:
        raise SynthError(f"{len(problems)} problem(s) in the teacher output, first: {problems[0]}")
    if not tasks:
        raise SynthError("the teacher wrote no usable task: " + "; ".join(problems[:3]))
    return SynthResult(tasks, pairs, problems, cost)


# ---------------------------------------------------------------------- review files
def write_review(path: str | os.PathLike, tasks: list[SynthTask]) -> Path:
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise SynthError("duplicate task ids")
    text = "".join(json.dumps(t.to_dict(), ensure_ascii=False) + "\n" for t in tasks)
    return atomic_write_text(path, text)


def read_review(path: str | os.PathLike) -> list[SynthTask]:
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise SynthError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SynthError(f"{p}: cannot read: {e}") from None
    out: list[SynthTask] = []
    seen: set[int] = set()
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{p}:{no}"
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            raise SynthError(f"{where}: not JSON ({e.msg})") from None
        if not isinstance(d, dict):
            raise SynthError(f"{where}: each line must be a JSON object")
        tid, goal, apps, acc = d.get("id"), d.get("goal"), d.get("apps"), d.get("accepted", None)
        if not isinstance(tid, int) or isinstance(tid, bool) or tid < 1:
            raise SynthError(f"{where}: 'id' must be a positive integer")
        if tid in seen:
            raise SynthError(f"{where}: duplicate id {tid}")
        if not isinstance(goal, str) or not goal.strip():
            raise SynthError(f"{where}: 'goal' must be a non-empty string")
        if not (isinstance(apps, list) and apps and all(isinstance(a, str) and a for a in apps)):
            raise SynthError(f"{where}: 'apps' must be a non-empty list of app names")
        if acc is not None and not isinstance(acc, bool):
            raise SynthError(f"{where}: 'accepted' must be true, false or null")
        prof = d.get("profile") or {}
        if not isinstance(prof, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in prof.items()):
            raise SynthError(f"{where}: 'profile' must map strings to strings")
        reason = d.get("reason", "")
        seen.add(tid)
        out.append(SynthTask(tid, goal, list(apps), acc, dict(prof), reason if isinstance(reason, str) else ""))
    if not out:
        raise SynthError(f"{p}: no tasks in the file")
    return out


def parse_ids(spec: str) -> set[int]:
    """``"1,3,5-7"`` -> {1, 3, 5, 6, 7}."""
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise SynthError(f"bad id {part!r}: use a list like 1,3,5-7")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a:
            raise SynthError(f"bad id range {part!r}")
        out.update(range(a, b + 1))
    if not out:
        raise SynthError("no ids given")
    return out


def apply_decisions(tasks: list[SynthTask], accept: set[int] = frozenset(), reject: set[int] = frozenset(),
                    accept_all: bool = False) -> int:
    """Set ``accepted`` on the named lines (``accept_all``: every line not in ``reject``). Returns lines changed."""
    both = set(accept) & set(reject)
    if both:
        raise SynthError(f"ids both accepted and rejected: {sorted(both)}")
    known = {t.id for t in tasks}
    unknown = (set(accept) | set(reject)) - known
    if unknown:
        raise SynthError(f"no task with id {', '.join(map(str, sorted(unknown)))}")
    n = 0
    for t in tasks:
        new = t.accepted
        if t.id in reject:
            new = False
        elif t.id in accept or accept_all:
            new = True
        n += int(new != t.accepted)
        t.accepted = new
    return n


# ---------------------------------------------------------------------- suites
def suite_dict(tasks: list[SynthTask], name: str, source: str = "") -> dict:
    acc = [t for t in tasks if t.accepted is True]
    if not acc:
        raise SynthError("no accepted tasks: review the file first (navrl synth-tasks review)")
    return {"format": SUITE_FORMAT, "version": SUITE_VERSION, "name": name, "source": source, "judge": "llm",
            "tasks": [{"id": t.id, "goal": t.goal, "apps": list(t.apps), "profile": dict(t.profile)} for t in acc]}


def export_suite(review: str | os.PathLike, out: str | os.PathLike, name: str | None = None) -> int:
    """Write the accepted tasks of ``review`` to the suite file ``out``; returns how many."""
    tasks = read_review(review)
    d = suite_dict(tasks, name or Path(out).stem, Path(review).name)
    atomic_write_text(out, json.dumps(d, indent=2, ensure_ascii=False) + "\n")
    return len(d["tasks"])


class SynthTaskSpec(TaskSpec):
    """A synthesized task: a phone world with no planted data, no template and no check.

    Judge it with the LLM judges; :meth:`check` and :meth:`blocked` raise TaskError.
    """

    @property
    def tpl(self):
        raise TaskError(f"synthesized task {self.id} has no template")

    def make_device(self) -> PhoneWorld:
        return PhoneWorld(skin=self.skin, seed=self.seed, perturb=self.perturb, faults=self.faults,
                          layout=self.layout, profile=self.profile)

    def check(self, world, answer=None) -> bool:
        raise TaskError(f"synthesized task {self.id} has no programmatic check: judge it with navrl.judge.llm")

    def blocked(self, world) -> bool:
        raise TaskError(f"synthesized task {self.id} has no programmatic check: judge it with navrl.judge.llm")

    @property
    def expected_answer(self) -> None:
        return None


def load_suite(path: str | os.PathLike, skin: str = "ios", seed: int = 0, max_steps: int = 30,
               perturb: PerturbConfig | None = None, faults: FaultConfig | None = None) -> list[SynthTaskSpec]:
    """The tasks of a suite file written by :func:`export_suite`."""
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SynthError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SynthError(f"{p}: not a suite file: {e}") from None
    if not isinstance(d, dict) or d.get("format") != SUITE_FORMAT or not isinstance(d.get("tasks"), list):
        raise SynthError(f"{p}: not a {SUITE_FORMAT} file")
    if d.get("version") != SUITE_VERSION:
        raise SynthError(f"{p}: unsupported suite version {d.get('version')!r}")
    from navrl.worlds.phone.sim.apps import app_names
    known = set(app_names())
    name = str(d.get("name") or p.stem)
    out = []
    for i, t in enumerate(d["tasks"], 1):
        if not (isinstance(t, dict) and isinstance(t.get("id"), int) and isinstance(t.get("goal"), str)
                and isinstance(t.get("apps"), list) and t["apps"]):
            raise SynthError(f"{p}: task {i} is malformed")
        bad = [a for a in t["apps"] if a not in known]
        if bad:
            raise SynthError(f"{p}: task {t['id']} uses unknown app {bad[0]!r}")
        prof = t.get("profile") or {}
        if not isinstance(prof, dict):
            raise SynthError(f"{p}: task {t['id']} has a malformed profile")
        out.append(SynthTaskSpec(
            id=f"{name}:synth:{skin}:{t['id']}", template="synth", seed=seed + t["id"], suite=name, skin=skin,
            layout="default", goal=t["goal"], apps=tuple(t["apps"]),
            family=Family.MULTI if len(t["apps"]) > 1 else Family.SINGLE, max_steps=max_steps, params={},
            profile={str(k): str(v) for k, v in prof.items()},
            perturb=perturb if perturb is not None else PerturbConfig(), faults=faults or FaultConfig()))
    if not out:
        raise SynthError(f"{p}: the suite has no tasks")
    return out


__all__ = ["AppPair", "SynthError", "SynthResult", "SynthTask", "SynthTaskSpec", "app_catalog",
           "apply_decisions", "export_suite", "load_suite", "parse_ids", "propose_pairs", "read_review",
           "suite_dict", "synthesize", "write_review", "write_tasks"]


def synth_api():
    """This module, as the phone world's ``synth`` hook (``navrl synth-tasks``)."""
    import sys
    return sys.modules[__name__]
