"""Memory-model work off the reply's critical path: the background jobs (`background`) and
how a finished job's result is applied to the thread (`results`)."""
