# shim/ - build/libttaudit-shim.so, the LD_PRELOAD library of `ttaudit capture`.
#
# It links only what its write path needs: libc, libdl/pthread and pcre2-8
# (banner patterns). It is never built with sanitizers (SANFLAGS are left
# out): an ASan runtime cannot be preloaded into an uninstrumented host, so
# the e2e tests that preload it skip under `make asan`.
#
# Also builds the small C programs the capture e2e tests run (tests/progs/).

SHIM_SO   := $(BUILD)/libttaudit-shim.so
SHIM_SRC  := $(wildcard shim/*.c) capture/jbuf.c base/linebuf.c capture/banner.c capture/banner_rules.c \
	capture/envlist.c capture/caprec.c capture/classify.c capture/ring.c base/auditline.c base/mono.c base/procstat.c base/jdoc_check.c base/status.c
SHIM_OBJ  := $(SHIM_SRC:%.c=$(OBJ)/pic/%.o)
# -flto: the write path crosses stream.c, linebuf.c, classify.c, banner.c and
# caprec.c for every line; inlining across them takes about an eighth of
# its instructions off (docs/capture.md, "Cost"). -fexceptions: a thread
# cancelled inside a wrapped write (a cancellation point) unwinds through
# the shim's frames, whose cleanups release the fd's lock and the FILE's.
SHIM_CFLAGS = $(WARN) $(CFLAGS) $(INCLUDES) $(shell $(PKG_CONFIG) --cflags libpcre2-8 2>/dev/null) \
	-fPIC -fvisibility=hidden -flto -fexceptions -DTTAUDIT_VERSION='"$(VERSION)"' -MMD -MP
SHIM_LIBS := $(shell $(PKG_CONFIG) --libs libpcre2-8 2>/dev/null) -ldl -lpthread

PROG_SRC  := $(wildcard tests/progs/*.c)
PROG_BIN  := $(PROG_SRC:tests/progs/%.c=$(BUILD)/progs/%)
# C++ hosts (libstdc++ iostreams; spdlog + fmt from Debian's libspdlog-dev),
# built when a C++ compiler and spdlog are there: scripts/deps.sh check
# installs them, and the tests that run them fail without them.
CXX       ?= c++
SPDLOG_FLAGS := $(shell $(PKG_CONFIG) --cflags --libs spdlog fmt 2>/dev/null)
ifneq ($(and $(SPDLOG_FLAGS),$(shell command -v $(CXX) 2>/dev/null)),)
PROG_CXX_SRC := $(wildcard tests/progs/*.cpp)
PROG_BIN  += $(PROG_CXX_SRC:tests/progs/%.cpp=$(BUILD)/progs/%)
endif

ALL_TARGETS += $(SHIM_SO) $(PROG_BIN)

$(OBJ)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(SHIM_SO): $(SHIM_OBJ) shim/shim.map
	$(CC) $(LDFLAGS) $(CFLAGS) -flto -shared -Wl,--version-script=shim/shim.map -Wl,-z,defs -Wl,-z,now \
		-o $@ $(SHIM_OBJ) $(SHIM_LIBS)

$(BUILD)/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -lpthread

# The hosts are never sanitized (they run with the shim preloaded).
$(BUILD)/progs/%: tests/progs/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -g -Wall -o $@ $< $(SPDLOG_FLAGS) -lpthread

# The shim's JSON validator allocates nothing, and that rests on a file
# boundary: the base/jdoc* files the shim links must reference no allocator.
# `make` fails otherwise. nm reads their plain objects (the same sources
# built for libttaudit.a): the shim's own are LTO bitcode, in which nm sees
# no symbols. The check also fails when nm finds no jdoc_check defined,
# so that it cannot pass by reading nothing.
NM ?= nm
SHIM_JDOC_OBJ := $(patsubst %.c,$(OBJ)/%.o,$(filter base/jdoc%,$(SHIM_SRC)))
SHIM_NOALLOC  := $(BUILD)/shim-noalloc.ok
$(SHIM_NOALLOC): $(SHIM_JDOC_OBJ)
	@$(NM) $^ | grep -q ' T jdoc_check$$' || \
		{ echo "shim: nm finds no jdoc_check in $^" >&2; exit 1; }
	@bad=$$($(NM) -u $^ | awk '$$1 == "U" && $$2 ~ /^(malloc|calloc|realloc|reallocarray|free|strdup|strndup|aligned_alloc|posix_memalign)$$/ { print $$2 }' | sort -u | tr '\n' ' '); \
	if [ -n "$$bad" ]; then \
		echo "shim: $^ call the allocator ($$bad): the shim links only what allocates nothing" >&2; exit 1; \
	fi
	@touch $@

ALL_TARGETS += $(SHIM_NOALLOC)
