"""Working memory for tool-using agents: tool results too long for the context are kept aside
and the model sees a pointer: `offload` (the `Offloader`), `pointer` (what
the model sees), `summary` (the memory model's summary of a result)."""

from engram.nodes.offload.offload import Offloader
from engram.nodes.offload.pointer import OffloadedPointer, pointer_of

__all__ = ["OffloadedPointer", "Offloader", "pointer_of"]
