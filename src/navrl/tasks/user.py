"""The simulated user who answers ``ask_user`` from the task's hidden profile (oracle)."""
from __future__ import annotations

import re

from navrl.tasks.task import Task

UNKNOWN = "I don't know."
_WORD = re.compile(r"[a-z0-9]+")


def _words(s: str) -> set[str]:
    return set(_WORD.findall(s.lower()))


class ProfileUser:
    """Answers a question when every word of one profile key appears in it.

    Profile keys are short phrases ("shoe size", "sister name"); an unanswerable
    question gets "I don't know." Deterministic, so runs are reproducible.
    """

    def answer(self, task: Task, question: str) -> str:
        q = _words(question) | {w.rstrip("s") for w in _words(question)}
        best = None
        for key, value in task.profile.items():
            kw = _words(key)
            if kw and kw <= q and (best is None or len(kw) > len(_words(best[0]))):
                best = (key, value)
        return str(best[1]) if best else UNKNOWN
