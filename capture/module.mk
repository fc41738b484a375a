# capture/ - code shared by the preload shim (shim/module.mk compiles the
# allocation-free part of it again as PIC) and by `ttaudit capture` and
# `ttaudit follow`, which link it as build/libttcapture.a (a part of the top
# Makefile's PARTS).

# `ttaudit capture` finds the shim through build/gen/config.h (the top
# Makefile makes launch.o depend on it).
