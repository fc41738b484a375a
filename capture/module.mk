# capture/ - code shared by the preload shim (shim/module.mk compiles the
# allocation-free part of it again as PIC) and by `ttaudit capture` and
# `ttaudit follow`, which link it as build/libttcapture.a.

CAPTURE_SRC := $(wildcard capture/*.c)
CAPTURE_OBJ := $(CAPTURE_SRC:%.c=$(OBJ)/%.o)
LIBTTCAPTURE := $(BUILD)/libttcapture.a

INCLUDES += -Icapture
# Before libttaudit.a: capture code calls jdoc_check() and status_set().
LINK_LIBS := $(LIBTTCAPTURE) $(LINK_LIBS)

$(LIBTTCAPTURE): $(CAPTURE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# `ttaudit capture` looks for the shim here after its own directory.
$(OBJ)/capture/launch.o: ALL_CFLAGS += -DTTAUDIT_LIBDIR='"$(LIBDIR)"'
