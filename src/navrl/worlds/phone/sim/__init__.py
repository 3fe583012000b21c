"""The phone world: navrl's embedded, deterministic simulated phone (DESIGN.md §7)."""
from navrl.worlds.phone.sim.config import FaultConfig, PerturbConfig
from navrl.worlds.phone.sim.world import PhoneWorld, WorldState

__all__ = ["PhoneWorld", "WorldState", "PerturbConfig", "FaultConfig"]
