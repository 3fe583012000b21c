"""The phone world: navrl's embedded, deterministic simulated phone (docs/design.md §7b)."""
from navrl.worlds.phone.sim.config import FaultConfig, PerturbConfig
from navrl.worlds.phone.sim.world import PhoneWorld, WorldState

__all__ = ["PhoneWorld", "WorldState", "PerturbConfig", "FaultConfig"]
