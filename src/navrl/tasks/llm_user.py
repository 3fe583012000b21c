"""A simulated user played by an LLM (the transcript: a model plays the user in training
and evaluation). Same interface as :class:`navrl.tasks.user.ProfileUser`.

The task's hidden profile is in the prompt; a question the profile cannot answer gets
exactly :data:`navrl.tasks.user.UNKNOWN` ("I don't know."). An endpoint that stays
unavailable raises ``DeviceError("user_unavailable")``: an infrastructure failure, which
the episode runner masks instead of charging the agent.
"""
from __future__ import annotations

import re

from navrl.api import ChatClient, outages_as
from navrl.device.base import DeviceError
from navrl.tasks.task import Task
from navrl.tasks.user import UNKNOWN

SYSTEM = ("You play the user of a phone assistant. The assistant is doing a task for you and asks you a "
          "question. Answer only from your profile below, as briefly as a person would (a few words, no "
          "explanations). Never invent facts. If your profile does not contain the answer, reply exactly: "
          f"{UNKNOWN}")

_UNKNOWN_RE = re.compile(r"^\W*(?:(?:i\s+do\s*n[o']?t|i\s+dont)\s+know|(?:i\s+have\s+)?no\s+idea|"
                         r"(?:i'?m\s+)?not\s+sure|unknown\W*$|n/a\W*$)", re.I)


class LLMUser:
    def __init__(self, client: ChatClient, temperature: float = 0.0, max_tokens: int = 100, max_chars: int = 300):
        self.client = client
        self.temperature, self.max_tokens, self.max_chars = temperature, max_tokens, max_chars
        self.cost = 0.0

    def __repr__(self) -> str:
        return f"LLMUser({self.client!r})"

    def prompt(self, task: Task, question: str) -> str:
        prof = [f"- {k}: {v}" for k, v in (task.profile or {}).items()]
        return "\n".join([f"The task you gave the assistant: {task.goal}",
                          "Your profile:" if prof else "Your profile: (empty)", *prof,
                          f"The assistant asks: {question}"])

    def answer(self, task: Task, question: str) -> str:
        msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": self.prompt(task, question or "")}]
        with outages_as(lambda e: DeviceError("user_unavailable", str(e))):
            r = self.client.chat(msgs, temperature=self.temperature, max_tokens=self.max_tokens)
        self.cost += r.cost
        return self.normalise(r.text)

    def normalise(self, text: str) -> str:
        s = " ".join((text or "").replace("\u2019", "'").split()).strip().strip('"').strip()
        if not s or _UNKNOWN_RE.match(s):
            return UNKNOWN
        return s[:self.max_chars]
