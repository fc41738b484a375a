"""Stand-in for tt-metal's `models` package (tests only): the modules the
instrumentation kit wraps, at their real paths, written for ttaudit's tests."""
