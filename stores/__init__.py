"""engram.stores."""
