"""The LoCoMo retrieval benchmark: on the memory engine alone (`engine`) and through the graph
(`graph`)."""
