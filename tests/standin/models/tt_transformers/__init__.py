"""Stand-in: tt-metal models/tt_transformers (tests only)."""
