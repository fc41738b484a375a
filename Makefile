# ttaudit - see README.md. `make` builds, `make demo` and `make check` first
# install the Debian packages that are missing (scripts/deps.sh), then run.
#
# Layout of the build (docs/architecture.md has the picture):
#   build/libttaudit.a     base/ + analyzer/ + replay/: the analysis library and
#                          the base every part uses (status, JSON, lines)
#   build/libtt<part>.a    one archive per other part: capture/, host/ (preflight,
#                          lock), probe/ (HTTP, metrics, readiness, arm evidence),
#                          bench/ (load), record/ (run records read), pair/, ab/,
#                          report/, watch/ (LAYERS below says who may use whom)
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
MANDIR    ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
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

# Everything but the shim compiles with these headers and links LINK_PKGS.
# libcurl, hwloc and libmicrohttpd are not linked: the commands that need
# them load them with dlopen (base/dynlib.h), so that no other command pays
# their start-up. The shim links only what its write path needs (see
# shim/module.mk).
PKGS      := libcjson libcurl libpcre2-8 hwloc zlib
LINK_PKGS := libcjson libpcre2-8 zlib
DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
DEP_LIBS  := $(shell $(PKG_CONFIG) --libs $(LINK_PKGS) 2>/dev/null) -lm -lpthread
# The executable's recv() (cli/recv.c) is the one a dlopened libcurl's calls
# must bind to, so it must be in the dynamic symbol table. GNU ld puts it
# there because libc defines recv too; it is exported by name so that the
# receive stamps do not hang on that.
RECV_EXPORT := -Wl,--export-dynamic-symbol=recv
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)

INCLUDES  := -I$(BUILD)/gen -I.
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

# The directories in layers, the top one first, `|` between layers: a file
# may include the headers of its own directory and of the layers below its
# own, never those of another directory of its own layer or of one above
# (scripts/check-includes.sh, `make check-includes`; docs/architecture.md
# draws it). tests/ and scripts/ are no part: they reach all of them.
LAYERS    := cli shim tools/ttsim | ab | pair report watch bench capture | probe host record | \
	replay | analyzer | base | include
# The other parts, each one archive build/libtt<part>.a, most dependent first
# (the layers' order): that is also the order the linker needs them in.
# base/, analyzer/ and replay/ are build/libttaudit.a; cli/, shim/ and
# tools/ttsim/ are programs; include/ is the installed header.
PARTS     := $(filter-out | cli shim tools/ttsim replay analyzer base include,$(LAYERS))
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

.PHONY: FORCE all demo check check-run deps deps-check test unit e2e interop check-stress check-includes doc readme asan fuzz bench \
	install uninstall clean _demo
all: _all
# The part archives' rules come first in the file: `make` alone must still build all.
.DEFAULT_GOAL := all

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
	$(CC) $(ALL_LDFLAGS) $(RECV_EXPORT) -o $@ $(CLI_OBJ) $(LINK_LIBS) $(DEP_LIBS)

$(BUILD)/tests/%: $(OBJ)/tests/%.o $(LINK_LIBS) $(TEST_EXTRA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(TEST_EXTRA) $(LINK_LIBS) $(TEST_EXTRA_LIBS) \
		$(DEP_LIBS) $(CMOCKA_LIBS)

# --- generated files -------------------------------------------------------

# build/gen/config.h: the install directories the binaries need at run time.
# Rewritten only when a value changes, so objects that include it are rebuilt
# exactly when PREFIX, BINDIR or LIBDIR change (make install PREFIX=/usr after
# make is then right, not a binary that looks in /usr/local).
CONFIG_H := $(BUILD)/gen/config.h
BIN_TO_LIB = $(shell realpath -m --relative-to='$(BINDIR)' '$(LIBDIR)')
$(CONFIG_H): FORCE
	@mkdir -p $(dir $@)
	@{ echo '/* generated by the Makefile: the install directories */'; \
	  echo '#define TTAUDIT_LIBDIR "$(LIBDIR)"'; \
	  echo '#define TTAUDIT_BIN_TO_LIB "$(BIN_TO_LIB)"'; \
	  echo '#define TTAUDIT_DATADIR "$(DATADIR)"'; } >$@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
FORCE:
$(OBJ)/capture/launch.o: $(CONFIG_H)

# The man page comes from the commands' own option tables (base/opt.h).
MAN1 := $(BUILD)/ttaudit.1
$(MAN1): $(TTAUDIT)
	$(TTAUDIT) help --man >$@.tmp && mv $@.tmp $@
_all: $(MAN1)

# pkg-config file of the analysis library.
PC_FILE := $(BUILD)/ttaudit.pc
$(PC_FILE): FORCE
	@mkdir -p $(dir $@)
	@{ echo 'prefix=$(PREFIX)'; echo 'libdir=$(LIBDIR)'; echo 'includedir=$(INCLUDEDIR)'; echo; \
	  echo 'Name: ttaudit'; \
	  echo 'Description: replay merge audits of the async-ahead token keep against guard rules'; \
	  echo 'Version: $(VERSION)'; \
	  echo 'Requires.private: zlib'; \
	  echo 'Cflags: -I$${includedir}'; \
	  echo 'Libs: -L$${libdir} -lttaudit'; \
	  echo 'Libs.private: -lm'; } >$@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
_all: $(PC_FILE)

# --- the two commands README gives ---------------------------------------

deps:
	@sh scripts/deps.sh build
deps-check:
	@sh scripts/deps.sh check

demo: deps
	@$(MAKE) --no-print-directory _demo
# The main job on bundled data: replay every incident audit, then gate two
# guards on the residual case (batch lets it through, exit 1 expected).
DEMO_AUDITS := $(sort $(wildcard fixtures/audit/*.jsonl fixtures/audit/*.jsonl.gz))
_demo: _all
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

# unit + e2e + the documents' examples on the normal build, then the sanitizer
# build, then the fuzzer.
check-run: check-includes _all unit e2e interop doc asan fuzz
	@echo "make check: all stages passed"

# The whole suite with a busy loop pinned to each core (tests/stress.sh):
# what must hold on a loaded CI machine.
check-stress: deps-check
	@MAKE='$(MAKE)' sh tests/stress.sh

# Every #include goes down the layers of LAYERS (scripts/check-includes.sh).
check-includes:
	@sh scripts/check-includes.sh .

unit: $(TEST_BIN)
	@sh tests/run-unit.sh $(TEST_BIN)

e2e: _all $(TEST_BIN)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh tests/run-e2e.sh $(E2E)

# Every command example of README.md and docs/*.md run and compared with its
# text, and every synopsis block compared with the option tables
# (tests/doc/run-examples.py); `make readme` rewrites the synopses instead.
DOCS := README.md $(sort $(wildcard docs/*.md))
doc: _all
	@$(PYTHON) tests/doc/run-examples.py --build $(BUILD) $(DOCS)
readme: _all
	@$(PYTHON) tests/doc/run-examples.py --build $(BUILD) --update-synopses $(DOCS)

test: unit e2e

# A real llama.cpp llama-server built from its source (LLAMA_CPP_TARBALL=
# overrides ../shared/upstream/...; skipped without it, failed with CI=true)
# and the tests of tests/interop/ against it (tests/interop/run.sh).
interop: _all
	@BUILD=$(BUILD) PYTHON=$(PYTHON) LLAMA_CPP_TARBALL='$(LLAMA_CPP_TARBALL)' sh tests/interop/run.sh

asan:
	@$(MAKE) --no-print-directory BUILD=build/asan CC=clang \
		SANITIZE=address,undefined CFLAGS="-O1 -g" unit e2e

FUZZ_SECONDS ?= 45
fuzz:
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS)

bench: _all
	@sh scripts/bench.sh

# --- install ---------------------------------------------------------------

install: _all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(PKGCONFIGDIR)
	install -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/ttaudit.1
	install -m 0644 $(PC_FILE) $(DESTDIR)$(PKGCONFIGDIR)/ttaudit.pc
	install -m 0755 $(TTAUDIT) $(DESTDIR)$(BINDIR)/ttaudit
	$(if $(wildcard $(BUILD)/libttaudit-shim.so),install -m 0755 $(BUILD)/libttaudit-shim.so $(DESTDIR)$(LIBDIR)/libttaudit-shim.so)
	$(if $(wildcard $(BUILD)/ttsim),install -m 0755 $(BUILD)/ttsim $(DESTDIR)$(BINDIR)/ttsim)
	install -m 0644 README.md $(wildcard docs/*.md) $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(INCLUDEDIR)/ttaudit $(DESTDIR)$(DATADIR)
	install -m 0644 $(LIBTTAUDIT) $(DESTDIR)$(LIBDIR)/libttaudit.a
	install -m 0644 include/ttaudit/*.h $(DESTDIR)$(INCLUDEDIR)/ttaudit/
	install -d $(DESTDIR)$(DATADIR)/ttaudit_emit/boot
	install -m 0644 $(wildcard tools/instrument/ttaudit_emit/*.py) $(DESTDIR)$(DATADIR)/ttaudit_emit/
	install -m 0644 tools/instrument/ttaudit_emit/boot/sitecustomize.py $(DESTDIR)$(DATADIR)/ttaudit_emit/boot/
	install -m 0644 watch/ttaudit-alerts.yml $(DESTDIR)$(DATADIR)/ttaudit-alerts.yml

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ttaudit $(DESTDIR)$(BINDIR)/ttsim \
		$(DESTDIR)$(LIBDIR)/libttaudit-shim.so
	rm -f $(DESTDIR)$(LIBDIR)/libttaudit.a $(DESTDIR)$(DATADIR)/ttaudit_emit.py \
		$(DESTDIR)$(MANDIR)/man1/ttaudit.1 $(DESTDIR)$(PKGCONFIGDIR)/ttaudit.pc \
		$(DESTDIR)$(DATADIR)/ttaudit-alerts.yml
	rm -rf $(DESTDIR)$(DATADIR)/ttaudit_emit
	rm -rf $(DESTDIR)$(DOCDIR) $(DESTDIR)$(INCLUDEDIR)/ttaudit
	-rmdir $(DESTDIR)$(DATADIR) 2>/dev/null

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
