# tools/ttsim/module.mk - ttsim, the simulated tt-metal vLLM server
# (build/ttsim). The library part (everything but main.c) is an archive,
# build/libttsim.a, that unit tests link through TEST_EXTRA; a test pulls only
# the members it uses.

TTSIM_SRC := $(filter-out tools/ttsim/main.c,$(wildcard tools/ttsim/*.c))
TTSIM_OBJ := $(TTSIM_SRC:%.c=$(OBJ)/%.o)
TTSIM_MAIN_OBJ := $(OBJ)/tools/ttsim/main.o
TTSIM_LIB := $(BUILD)/libttsim.a
TTSIM := $(BUILD)/ttsim
TTSIM_CFLAGS := $(shell $(PKG_CONFIG) --cflags libmicrohttpd 2>/dev/null)
TTSIM_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null)

$(TTSIM_OBJ) $(TTSIM_MAIN_OBJ): ALL_CFLAGS += $(TTSIM_CFLAGS)

$(TTSIM_LIB): $(TTSIM_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(TTSIM): $(TTSIM_MAIN_OBJ) $(TTSIM_LIB) $(LIBTTAUDIT)
	$(CC) $(ALL_LDFLAGS) -o $@ $(TTSIM_MAIN_OBJ) $(TTSIM_LIB) $(LIBTTAUDIT) \
		$(DEP_LIBS) $(TTSIM_LIBS)

ALL_TARGETS += $(TTSIM)
TEST_EXTRA += $(TTSIM_LIB)
TEST_EXTRA_LIBS += $(TTSIM_LIBS)
