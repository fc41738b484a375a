# watch/ - `ttaudit watch`: the sources followed, the replay per source and
# process, the metrics and their HTTP server (libmicrohttpd), linked into the
# CLI as build/libttwatch.a (a part of the top Makefile's PARTS).
WATCH_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null)
DEP_LIBS += $(WATCH_LIBS)
