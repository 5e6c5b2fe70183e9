"""Benchmarks, one room for every layer: `python -m engram.evals.bench SECTION [options]`
(see `__main__`)."""
