"""A planner served by an OpenAI-compatible chat endpoint (API models for evaluation).

It sends :data:`navrl.agent.prompt.SYSTEM`, :func:`navrl.agent.prompt.build_prompt` and the
screenshot, and returns the model's text unchanged: the episode runner parses it like any
other planner's output. Token usage and cost go to ``PlannerOutput.usage``
(``prompt_tokens``, ``completion_tokens``, ``cost``).

An endpoint that stays unavailable raises :class:`navrl.api.APIUnavailable` (the run
stops; with the reply cache a re-run resumes for free): an outage is never turned into
an empty, penalised plan.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any

from navrl.agent.planner import Planner, PlannerContext, PlannerOutput
from navrl.agent.prompt import SYSTEM, PromptConfig, build_prompt
from navrl.api import APIConfig, ChatClient


@dataclass(frozen=True)
class APIPlannerConfig:
    """How the API planner asks."""

    send_screenshot: bool = True
    """Attach the screenshot (a text-only model gets the UI tree of the prompt only)."""
    max_side: int | None = None
    """Downscale the screenshot so its longer side is at most this many pixels."""
    temperature: float | None = None
    """Sampling temperature; None: the client's default."""
    max_tokens: int = 512
    """Completion-token cap of one plan."""
    workers: int = 4
    """Contexts of one batch planned concurrently."""
    prompt: PromptConfig = field(default_factory=PromptConfig)
    """History and UI-tree limits of the prompt."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be >= 1")


class APIPlanner(Planner):
    name = "api"

    def __init__(self, client: ChatClient, config: APIPlannerConfig | None = None):
        self.client = client
        self.cfg = config or APIPlannerConfig()

    def __repr__(self) -> str:
        return f"APIPlanner({self.client!r})"

    @classmethod
    def from_env(cls, **kw: Any) -> "APIPlanner":
        """Endpoint and model from NAVRL_API_BASE / NAVRL_API_MODEL / NAVRL_API_KEY_ENV.

        Keywords naming :class:`~navrl.api.APIConfig` fields override the environment;
        the others are :class:`APIPlannerConfig` fields. Raises ValueError when no endpoint
        or model is configured.
        """
        api_names = {f.name for f in fields(APIConfig)}
        planner_names = {f.name for f in fields(APIPlannerConfig)}
        bad = set(kw) - api_names - planner_names
        if bad:
            raise ValueError(f"unknown API planner options: {', '.join(sorted(bad))}")
        cfg = APIConfig.from_env(**{k: v for k, v in kw.items() if k in api_names}).require()
        pcfg = APIPlannerConfig(**{k: v for k, v in kw.items() if k in planner_names and v is not None})
        return cls(ChatClient(cfg), pcfg)

    def _image(self, ctx: PlannerContext):
        if not self.cfg.send_screenshot or not ctx.obs.has_screenshot:
            return []
        im = ctx.obs.screenshot
        m = self.cfg.max_side
        if m and max(im.size) > m:
            s = m / max(im.size)
            im = im.resize((max(1, round(im.size[0] * s)), max(1, round(im.size[1] * s))))
        return [im]

    def _one(self, ctx: PlannerContext) -> PlannerOutput:
        prompt = build_prompt(ctx, self.cfg.prompt)
        r = self.client.chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
                             images=self._image(ctx), temperature=self.cfg.temperature,
                             max_tokens=self.cfg.max_tokens)
        return PlannerOutput(r.text, prompt=prompt, usage=r.usage_dict())

    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        if self.cfg.workers == 1 or len(contexts) <= 1:
            return [self._one(c) for c in contexts]
        with ThreadPoolExecutor(min(self.cfg.workers, len(contexts))) as ex:
            return list(ex.map(self._one, contexts))
