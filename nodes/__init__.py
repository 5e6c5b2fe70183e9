"""engram.nodes."""
