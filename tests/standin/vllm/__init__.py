"""Stand-in: vLLM (tests only): only the engine-core entry the kit wraps."""
