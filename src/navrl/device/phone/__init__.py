"""The phone world: navrl's embedded, deterministic simulated phone (DESIGN.md §7)."""
from navrl.device.phone.config import FaultConfig, PerturbConfig
from navrl.device.phone.world import PhoneWorld, WorldState

__all__ = ["PhoneWorld", "WorldState", "PerturbConfig", "FaultConfig"]
