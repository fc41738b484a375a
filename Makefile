# ttaudit - see README.md. `make` builds, `make demo` and `make check` first
# install the Debian packages that are missing (tools/deps.sh), then run.
#
# Layout of the build (docs/architecture.md has the picture):
#   build/libttaudit.a     base/ + analyzer/ + replay/: the analysis library and
#                          the base every part uses (status, JSON, lines)
#   build/libtt<part>.a    one archive per other part: capture/, host/ (preflight,
#                          lock), probe/ (HTTP, metrics, readiness, arm evidence),
#                          bench/ (load), pair/, ab/, report/
#   build/ttaudit          cli/                 (thin front end, command table)
#   build/libttaudit-shim.so, build/ttsim       from their own fragments (*/module.mk)
#   build/tests/test_*     one cmocka binary per tests/test_<module>.c
#
# SANITIZE=address,undefined and BUILD=dir give a sanitizer tree (make asan).

BUILD     ?= build
.DEFAULT_GOAL := all
CC        ?= cc
CFLAGS    ?= -O2 -g
PKG_CONFIG ?= pkg-config
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
LIBDIR    ?= $(PREFIX)/lib
DOCDIR    ?= $(PREFIX)/share/doc/ttaudit
INCLUDEDIR ?= $(PREFIX)/include
DATADIR   ?= $(PREFIX)/share/ttaudit
PYTHON    ?= /usr/bin/python3
VERSION   := 0.1.0

WARN := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wstrict-prototypes \
	-Wformat-security -Wvla -Wwrite-strings
ifneq ($(WERROR)$(CI),)
WARN += -Werror
endif
ifneq ($(SANITIZE),)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

# Everything but the shim links these. The shim links only what its write path
# needs (see shim/module.mk).
PKGS      := libcjson libcurl libpcre2-8 hwloc zlib
DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
DEP_LIBS  := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lm -lpthread
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)

INCLUDES  := -Ibase -Ianalyzer -Ireplay -Icapture -Ihost -Iprobe -Ibench -Ipair -Iab -Ireport -Icli
ALL_CFLAGS = $(WARN) $(CFLAGS) $(SANFLAGS) $(INCLUDES) $(DEP_CFLAGS) \
	-DTTAUDIT_VERSION='"$(VERSION)"' -MMD -MP
ALL_LDFLAGS = $(LDFLAGS) $(SANFLAGS)

OBJ := $(BUILD)/obj

LIB_SRC   := $(wildcard base/*.c analyzer/*.c replay/*.c)
CLI_SRC   := $(wildcard cli/*.c)
TEST_SRC  := $(wildcard tests/test_*.c)

LIB_OBJ   := $(LIB_SRC:%.c=$(OBJ)/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(OBJ)/%.o)

LIBTTAUDIT := $(BUILD)/libttaudit.a
TTAUDIT    := $(BUILD)/ttaudit

# The other parts, each one archive build/libtt<part>.a, most dependent first:
# that is also the order the linker needs them in.
PARTS     := ab pair report bench probe host capture
PART_LIBS := $(foreach p,$(PARTS),$(if $(wildcard $(p)/*.c),$(BUILD)/libtt$(p).a))

define part_rule
$(BUILD)/libtt$(1).a: $$(patsubst %.c,$$(OBJ)/%.o,$$(wildcard $(1)/*.c))
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach p,$(PARTS),$(eval $(call part_rule,$(p))))

# Libraries the CLI and the tests link, most dependent first. Fragments append.
LINK_LIBS := $(PART_LIBS) $(LIBTTAUDIT)
# Extra link objects for unit tests only (e.g. ttsim's model); fragments append.
TEST_EXTRA :=
TEST_EXTRA_LIBS :=
# Targets `make all` builds besides the CLI; fragments append.
ALL_TARGETS := $(TTAUDIT)
# Shell end-to-end tests, run in name order by tests/run-e2e.sh.
E2E := $(sort $(wildcard tests/e2e/[0-9]*.sh))

TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

# Keep objects make would otherwise delete as intermediates after a link.
.SECONDARY:

.PHONY: all demo check check-run deps deps-check test unit e2e asan fuzz bench \
	install uninstall clean _demo
all: _all

# Fragments of parts that build something other than a library member.
-include $(sort $(wildcard */module.mk tools/*/module.mk))

_all: $(ALL_TARGETS)

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIBTTAUDIT): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(TTAUDIT): $(CLI_OBJ) $(LINK_LIBS)
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(LINK_LIBS) $(DEP_LIBS)

$(BUILD)/tests/%: $(OBJ)/tests/%.o $(LINK_LIBS) $(TEST_EXTRA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(TEST_EXTRA) $(LINK_LIBS) $(TEST_EXTRA_LIBS) \
		$(DEP_LIBS) $(CMOCKA_LIBS)

# --- the two commands README gives ---------------------------------------

deps:
	@sh tools/deps.sh build
deps-check:
	@sh tools/deps.sh check

demo: deps
	@$(MAKE) --no-print-directory _demo
# The main job on bundled data: replay every incident audit, then gate two
# guards on the residual case (batch lets it through, exit 1 expected).
DEMO_AUDITS := $(sort $(wildcard fixtures/audit/*.jsonl fixtures/audit/*.jsonl.gz))
_demo: $(TTAUDIT)
	@echo '$$ ttaudit replay fixtures/audit/*'
	@$(TTAUDIT) replay $(DEMO_AUDITS)
	@echo
	@echo '$$ ttaudit validate --rule batch fixtures/audit/residual-coinciding.jsonl'
	@$(TTAUDIT) validate --rule batch fixtures/audit/residual-coinciding.jsonl; test $$? -eq 1
	@echo
	@echo '$$ ttaudit validate --rule batch+lifetime fixtures/audit/residual-coinciding.jsonl fixtures/audit/incident-confirmed.jsonl'
	@$(TTAUDIT) validate --rule batch+lifetime fixtures/audit/residual-coinciding.jsonl fixtures/audit/incident-confirmed.jsonl

check: deps-check
	@$(MAKE) --no-print-directory check-run

# unit + e2e on the normal build, then the sanitizer build, then the fuzzer.
check-run: _all unit e2e asan fuzz
	@echo "make check: all stages passed"

unit: $(TEST_BIN)
	@sh tests/run-unit.sh $(TEST_BIN)

e2e: _all $(TEST_BIN)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh tests/run-e2e.sh $(E2E)

test: unit e2e

asan:
	@$(MAKE) --no-print-directory BUILD=build/asan CC=clang \
		SANITIZE=address,undefined CFLAGS="-O1 -g" unit e2e

FUZZ_SECONDS ?= 45
fuzz:
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS)

bench: _all
	@sh tools/bench.sh

# --- install ---------------------------------------------------------------

install: _all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DOCDIR)
	install -m 0755 $(TTAUDIT) $(DESTDIR)$(BINDIR)/ttaudit
	$(if $(wildcard $(BUILD)/libttaudit-shim.so),install -m 0755 $(BUILD)/libttaudit-shim.so $(DESTDIR)$(LIBDIR)/libttaudit-shim.so)
	$(if $(wildcard $(BUILD)/ttsim),install -m 0755 $(BUILD)/ttsim $(DESTDIR)$(BINDIR)/ttsim)
	install -m 0644 README.md $(wildcard docs/*.md) $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(INCLUDEDIR)/ttaudit $(DESTDIR)$(DATADIR)
	install -m 0644 $(LIBTTAUDIT) $(DESTDIR)$(LIBDIR)/libttaudit.a
	install -m 0644 $(wildcard base/*.h analyzer/*.h replay/*.h) $(DESTDIR)$(INCLUDEDIR)/ttaudit/
	$(if $(wildcard tools/instrument/ttaudit_emit.py),install -m 0644 tools/instrument/ttaudit_emit.py $(DESTDIR)$(DATADIR)/)

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ttaudit $(DESTDIR)$(BINDIR)/ttsim \
		$(DESTDIR)$(LIBDIR)/libttaudit-shim.so
	rm -f $(DESTDIR)$(LIBDIR)/libttaudit.a $(DESTDIR)$(DATADIR)/ttaudit_emit.py
	rm -rf $(DESTDIR)$(DOCDIR) $(DESTDIR)$(INCLUDEDIR)/ttaudit
	-rmdir $(DESTDIR)$(DATADIR) 2>/dev/null

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
