"""Everything that talks to the memory model: the bounded call (`calls`) that the summarizer,
the compressor, the merge decider and the model extractors share, and those callers."""
