# pair/ - build/libttpair.a: pairing of bench records with merge audits
# (pair.c), the A/B validation (ab.c) and the SVG figures (svg.c). It calls
# the bench, capture and analysis libraries, so it links before them: this
# fragment is included after capture/module.mk (the top Makefile sorts the
# fragments by path), and puts its archive first.

PAIR_SRC := $(wildcard pair/*.c)
PAIR_OBJ := $(PAIR_SRC:%.c=$(OBJ)/%.o)
LIBTTPAIR := $(BUILD)/libttpair.a

INCLUDES += -Ipair
LINK_LIBS := $(LIBTTPAIR) $(LINK_LIBS)

$(LIBTTPAIR): $(PAIR_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
