"""Typed records of what happened: :class:`Step` and :class:`Trajectory` (JSONL-able)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Step:
    t: int
    output: str                       # raw planner output
    parsed: bool                      # False: unparseable (charged at this step)
    reasoning: str = ""
    step: str = ""
    remaining: str = ""
    action: str | None = None         # Action.to_text() of what was executed / declared
    kind: str = "device"              # device | ask_user | complete | unparseable | ungrounded
    verdict: str | None = None        # step/ask verdict
    reward: float = 0.0               # dense reward of this step
    judge_reason: str = ""
    screen_hash: str = ""             # hash of the before-screen's UI tree
    phash: int | None = None          # 64-bit perceptual hash of the before-screenshot (GiGPPO)
    ui_text: str = ""                 # the before-screen as text
    prompt: str | None = None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None   # the behaviour policy's (what sampled the tokens)
    policy_logprobs: list[float] | None = None   # the planner's own where exploration mixed (else None)
    value: float | None = None
    user_answer: str | None = None
    timings: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)


@dataclass
class Trajectory:
    task: dict
    steps: list[Step] = field(default_factory=list)
    end: str = "budget"               # EndReason value
    terminal_verdict: str | None = None
    terminal_reward: float = 0.0
    terminal_reason: str = ""
    answer: str | None = None
    valid: bool = True
    invalid_reason: str | None = None
    success: bool = False
    group: int = 0                    # sibling group (same task instance)
    loops: int = 0                    # repeated (screen, action) pairs seen
    frames: list[bytes] = field(default_factory=list, repr=False)   # PNG per before-screen (+ final)
    cost: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def length(self) -> int:
        return len(self.steps)

    @property
    def total_reward(self) -> float:
        return sum(s.reward for s in self.steps) + self.terminal_reward

    def to_json(self) -> str:
        d = asdict(self)
        d.pop("frames")
        d["n_frames"] = len(self.frames)
        return json.dumps(d)

    @staticmethod
    def from_json(line: str) -> "Trajectory":
        d: dict[str, Any] = json.loads(line)
        d.pop("n_frames", None)
        steps = [Step(**s) for s in d.pop("steps")]
        return Trajectory(steps=steps, **d)
