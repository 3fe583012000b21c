"""The pointer planner (docs/design.md §3a): the CPU default. It scores UI nodes and copies text
spans instead of generating entity strings, so what it learns on one task instance carries
to the next.

Its config is imported eagerly; the planner and the vocabulary (torch, numpy) when first asked for
(PEP 562), so that reading a preset does not import torch."""
from navrl.agent.policy.pointer.config import PointerConfig

__all__ = ["PointerConfig", "PointerPlanner", "phone_world_vocabulary"]


def __getattr__(name: str):
    if name == "PointerPlanner":
        from navrl.agent.policy.pointer.planner import PointerPlanner
        return PointerPlanner
    if name == "phone_world_vocabulary":
        from navrl.agent.policy.pointer.vocab import phone_world_vocabulary
        return phone_world_vocabulary
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
