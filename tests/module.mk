# tests/ - link options of single unit-test binaries.
#
# test_reader injects allocation failures into the reader: the linker sends
# the library's (and the test's) malloc, calloc, realloc, strdup, free and
# inflateInit2_ through the __wrap_* functions the test defines. `private` keeps the
# options off the prerequisites (the libraries).
$(BUILD)/tests/test_reader: private ALL_LDFLAGS += \
	-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free,--wrap=inflateInit2_

# test_rxstamp and test_load read through the program's recv(), which only the
# executable defines (cli/recv.c): they link it as the executable does.
$(BUILD)/tests/test_rxstamp $(BUILD)/tests/test_load: $(OBJ)/cli/recv.o
$(BUILD)/tests/test_rxstamp $(BUILD)/tests/test_load: private TEST_EXTRA += $(OBJ)/cli/recv.o
$(BUILD)/tests/test_rxstamp $(BUILD)/tests/test_load: private ALL_LDFLAGS += $(RECV_EXPORT)

# ttaudit loads libcurl and libmicrohttpd with dlopen (base/dynlib.h); tests
# that call them by name, as a client of ttsim (test_ttsim_server) or as a
# server for the readiness ladder (test_ready), link them themselves.
$(BUILD)/tests/test_ttsim_server: private TEST_EXTRA_LIBS += $(shell $(PKG_CONFIG) --libs libcurl 2>/dev/null)
$(BUILD)/tests/test_ready: private TEST_EXTRA_LIBS += $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null)

# test_mhdfn proves that loading the table is what brings libmicrohttpd in:
# it does not link what the other suites link for ttsim's server.
$(BUILD)/tests/test_mhdfn: private TEST_EXTRA_LIBS :=

# test_alloc makes realloc fail on demand, as test_reader does.
$(BUILD)/tests/test_alloc: private ALL_LDFLAGS += -Wl,--wrap=realloc
