# tests/ - link options of single unit-test binaries.
#
# test_reader injects allocation failures into the reader: the linker sends
# the library's (and the test's) malloc, calloc, realloc, strdup, free and
# inflateInit2_ through the __wrap_* functions the test defines. `private` keeps the
# options off the prerequisites (the libraries).
$(BUILD)/tests/test_reader: private ALL_LDFLAGS += \
	-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free,--wrap=inflateInit2_

# test_opt tests the CLI's option tables, which no library holds.
$(BUILD)/tests/test_opt: $(OBJ)/cli/opt.o
$(BUILD)/tests/test_opt: private TEST_EXTRA += $(OBJ)/cli/opt.o

# test_rxstamp and test_load read through the program's recv(), which only the
# executable defines (cli/recv.c): they link it as the executable does.
$(BUILD)/tests/test_rxstamp $(BUILD)/tests/test_load: $(OBJ)/cli/recv.o
$(BUILD)/tests/test_rxstamp $(BUILD)/tests/test_load: private TEST_EXTRA += $(OBJ)/cli/recv.o
