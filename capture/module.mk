# capture/ - code shared by the preload shim (shim/module.mk compiles the
# allocation-free part of it again as PIC) and by `ttaudit capture` and
# `ttaudit follow`, which link it as build/libttcapture.a (a part of the top
# Makefile's PARTS).

# `ttaudit capture` looks for the shim here after its own directory.
$(OBJ)/capture/launch.o: ALL_CFLAGS += -DTTAUDIT_LIBDIR='"$(LIBDIR)"'
