"""Stand-in: vllm.v1 (tests only)."""
