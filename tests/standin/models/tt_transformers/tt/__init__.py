"""Stand-in: tt-metal models/tt_transformers/tt (tests only)."""
