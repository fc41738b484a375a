"""Stand-in for vLLM (tests only): the engine-core entry, nothing else."""
