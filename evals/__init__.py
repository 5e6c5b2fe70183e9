"""engram.evals."""
