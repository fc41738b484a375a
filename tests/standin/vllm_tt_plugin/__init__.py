"""Stand-in for the TT vLLM plugin (tests only): the runner and the decode
controller the kit wraps, at their real module paths."""
