"""Stand-in: vllm.v1.engine (tests only)."""
