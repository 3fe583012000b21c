"""The pointer planner (docs/design.md §3a): the CPU default. It scores UI nodes and copies text
spans instead of generating entity strings, so what it learns on one task instance carries
to the next."""
from navrl.agent.policy.pointer.model import PointerConfig
from navrl.agent.policy.pointer.planner import PointerPlanner
from navrl.agent.policy.pointer.vocab import phone_world_vocabulary

__all__ = ["PointerConfig", "PointerPlanner", "phone_world_vocabulary"]
