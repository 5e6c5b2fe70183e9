"""engram.graph."""
