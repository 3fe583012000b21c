"""What the trainer needs from a trainable planner.

A Policy is a :class:`Planner` (batched ``plan``) that can also re-score its own
outputs with gradients and expose the hidden state at the last prompt token (where the
critic reads the value, so it cannot see the output it judges).
"""
from __future__ import annotations

import abc
import contextlib
import copy
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from navrl.agent.planner import Planner


@dataclass
class ScoredBatch:
    """Re-scored (prompt, output) pairs.

    ``logprobs`` [N, L] log-probability of each output token (0 on padding),
    ``mask`` [N, L] 1 on real output tokens, ``entropy`` [N, L] per-token entropy,
    ``state`` [N, H] hidden state at the last prompt token.
    """

    logprobs: torch.Tensor
    mask: torch.Tensor
    entropy: torch.Tensor
    state: torch.Tensor


@dataclass(frozen=True)
class Sampling:
    """How a policy decodes, passed to it explicitly (:meth:`Policy.sampled`), never set on it
    from outside: greedy (evaluation), or sampled at ``temperature`` with ``explore`` (rollouts)."""

    greedy: bool = False
    """Decode the most likely output (evaluation) instead of sampling."""
    temperature: float = 1.0
    """Sampling temperature; the recorded log-probs are of the tempered distribution."""
    explore: float = 0.0
    """Share of probability spread uniformly over the legal first-factor choices while sampling."""
    explore_arg: float = 0.0
    """Share of probability of a decision's argument (the pointer planner's node or text span)
    spread uniformly over its coarse legal choices while sampling (policies without one ignore it)."""
    explore_arg_by_source: bool = False
    """Spread ``explore_arg``'s share of a text argument over the candidates' sources instead
    (an equal share per source present, within a source by the policy's own probabilities)."""
    explore_prior: float = 0.0
    """Share of each decision factor's probability taken from the policy's frozen ``prior``
    (the planner RL started from) while sampling (policies without a prior ignore it)."""


GREEDY = Sampling(greedy=True)
"""Greedy decoding: what every evaluation uses."""


class Policy(Planner, abc.ABC):
    """A trainable planner."""

    sample: bool = True
    """Sample outputs (training rollouts) or decode greedily (evaluation). Set only through
    :meth:`sampled` / :meth:`using` with a :class:`Sampling`, never from outside."""
    temperature: float = 1.0
    """The sampling temperature (see :class:`Sampling`)."""
    explore: float = 0.0
    """While sampling, the share of probability spread uniformly over the legal choices of a
    decision's first factor (policies without factors ignore it). Rollouts record the
    log-probs of that behaviour distribution, so PPO's ratio corrects for it."""
    explore_arg: float = 0.0
    """While sampling, the share of probability of a decision's argument factor spread uniformly
    over its coarse legal choices (the pointer planner: nodes accepting the kind; whole or quoted
    text candidates). Recorded in the log-probs like ``explore``."""
    explore_arg_by_source: bool = False
    """While sampling, ``explore_arg``'s share of a text argument goes to the candidates' sources
    (goal, answers and memory, screen labels, screen values, fixed) equally, and within a source
    by the policy's own probabilities renormalised there (see :class:`Sampling`)."""
    explore_prior: float = 0.0
    """While sampling, the share of each decision factor's probability drawn from ``prior``'s
    distribution at the same state. Recorded in the log-probs like ``explore``."""
    prior: "Policy | None" = None
    """Set by the trainer when ``explore_prior`` is used: a frozen copy of the policy it was given."""
    critic: Callable[[torch.Tensor], torch.Tensor | None] | None = None
    """Set by the trainer: states [N, H] -> values [N] (or None), logged with ``plan``'s outputs."""

    def reference_copy(self) -> "Policy":
        """A frozen copy for a KL reference or an exploration prior (the trainer's
        ``ref_policy``): its own weights, which stay where training started. A deep copy here;
        policies whose encodings do not depend on the weights share them with the copy (the
        pointer planner: one cache of encoded states, not two)."""
        return copy.deepcopy(self)

    def sampled(self, sampling: Sampling) -> "SampledPolicy":
        """This policy as a planner that decodes with ``sampling`` (the weights are shared; the
        policy itself is not changed): ``evaluate(policy.sampled(GREEDY), ...)``."""
        return SampledPolicy(self, sampling)

    @contextlib.contextmanager
    def using(self, sampling: Sampling) -> Iterator["Policy"]:
        """Decode with ``sampling`` inside the block, and as before after it."""
        names = ("explore", "explore_arg", "explore_arg_by_source", "explore_prior")
        old = (self.sample, getattr(self, "temperature", 1.0), *(getattr(self, n) for n in names))
        self.sample, self.temperature = not sampling.greedy, sampling.temperature
        for n in names:
            setattr(self, n, getattr(sampling, n))
        try:
            yield self
        finally:
            self.sample, self.temperature = old[:2]
            for n, v in zip(names, old[2:]):
                setattr(self, n, v)

    @abc.abstractmethod
    def prompt_text(self, ctx) -> str:
        """The exact prompt this policy conditions on for planner context ``ctx``."""

    @abc.abstractmethod
    def score(self, prompts: list[str], outputs: list[list[int]], temperature: float = 1.0) -> ScoredBatch:
        """Log-probs (with grad) of given output token ids after the given prompts, under the
        distribution at ``temperature``: log softmax(logits / temperature). ``plan`` records its
        sampled tokens' log-probs at ``self.temperature``, so PPO scores at the rollout
        temperature and its ratios start at exactly 1; SFT scores at 1."""

    def decision_factors(self, outputs: list[list[int]], width: int) -> list[tuple[str, ...]]:
        """Per output, the name of the decision each of its ``width`` scored positions stands
        for (exploration diagnostics: entropy per factor). Token-level policies: ``"token"``."""
        return [("token",) * width for _ in outputs]

    @abc.abstractmethod
    def encode_target(self, text: str) -> list[int]:
        """Token ids of an output text (SFT targets), end-of-sequence included."""

    def encode_demo(self, prompt: str, text: str) -> list[int] | None:
        """Output ids of a demonstration's target ``text`` after ``prompt`` (SFT); None when this
        policy cannot express it. Text policies ignore the prompt; pointer policies need it."""
        return self.encode_target(text)

    def relabel_prompt(self, prompt: str, goal: str) -> str | None:
        """``prompt`` as it would read had the task's goal been ``goal`` (hindsight relabelling:
        everything else — screen, history, answers — stays); None where this policy's prompt
        holds no goal it can replace. Text prompts (navrl.agent.prompt) open with ``Task: <goal>``."""
        head, sep, rest = prompt.partition("\n")
        return f"Task: {goal}{sep}{rest}" if head.startswith("Task: ") else None

    def prepare_sft(self, demos) -> None:
        """Called once with all demonstrations before SFT (e.g. to learn question frames)."""

    def augment_prompt(self, prompt: str, rng) -> str:
        """A randomised version of a demonstration's ``prompt`` with the same decision (SFT and
        PPO-ptx data augmentation); policies without one return ``prompt`` unchanged."""
        return prompt

    def plan_values(self, state: torch.Tensor | None, n: int) -> list[float | None]:
        """The critic's value of each of the ``n`` planned states, for their outputs: None
        each without a critic, a state, or a value (the GiGPPO critic gives none at rollout)."""
        v = self.critic(state) if self.critic is not None and state is not None else None
        return [float(x) for x in v.reshape(-1).tolist()] if v is not None else [None] * n

    @abc.abstractmethod
    def policy_parameters(self) -> list[torch.nn.Parameter]: ...

    @abc.abstractmethod
    def state_dict_all(self) -> dict: ...

    @abc.abstractmethod
    def load_state_dict_all(self, state: dict) -> None: ...

    @property
    @abc.abstractmethod
    def state_dim(self) -> int:
        """Size of the last-prompt-token hidden state (the critic's input)."""


def greedy(planner: Planner) -> Planner:
    """``planner`` decoding greedily: a policy's :meth:`Policy.sampled` view with :data:`GREEDY`;
    any other planner (the expert, an API model) as it is."""
    return planner.sampled(GREEDY) if isinstance(planner, Policy) else planner


class SampledPolicy(Planner):
    """A policy seen as a planner that always decodes with one :class:`Sampling` (what runners,
    evaluations and the trainer's rollouts are handed). Reads of anything else go to the policy."""

    def __init__(self, policy: Policy, sampling: Sampling) -> None:
        self.policy, self.sampling = policy, sampling
        self.name = policy.name

    def plan(self, contexts):
        with self.policy.using(self.sampling):
            return self.policy.plan(contexts)

    def __getattr__(self, name: str):
        return getattr(self.policy, name)
