/*
 * hwlocfn.c - hwloc's table (hwlocfn.h), filled by dlopen once per process.
 */
#include "host/hwlocfn.h"
#include "base/dynlib.h"

#include <stddef.h>

/* The soname is not in hwloc's headers; its API version is: every 2.x
 * release keeps libhwloc.so.15 (1.x had .so.5). */
#if HWLOC_API_VERSION < 0x00020000 || HWLOC_API_VERSION >= 0x00030000
#error "this hwloc's soname is not libhwloc.so.15: set HWLOCFN_SONAME"
#endif

/* Every member of struct hwlocfn, once: the symbol list and the type
 * checks are made from it. */
#define HWLOCFN_EACH(X) \
	X(topology_init) X(topology_set_xml) X(topology_set_io_types_filter) X(topology_load) \
	X(topology_destroy) X(get_type_depth) X(get_obj_by_depth) X(bitmap_first) X(bitmap_next)

/* Its entries, each checked against the header (dynlib.h). */
#define HWLOCFN_CHECK(f) DYNLIB_CHECK(struct hwlocfn, f, hwloc_##f);
HWLOCFN_EACH(HWLOCFN_CHECK)
#define HWLOCFN_SYM(f) DYNLIB_SYM(struct hwlocfn, f, hwloc_##f),
static const struct dynlib_sym hwlocfn_syms[] = { HWLOCFN_EACH(HWLOCFN_SYM) };
DYNLIB_COMPLETE(hwlocfn_syms, struct hwlocfn);

static const struct dynlib_spec hwlocfn_spec = {
	.package = "libhwloc15", .syms = hwlocfn_syms,
	.n_syms = sizeof(hwlocfn_syms) / sizeof(hwlocfn_syms[0]), .table_size = sizeof(struct hwlocfn)
};

static struct hwlocfn hwlocfn_table;
static struct dynlib_once hwlocfn_loaded =
	DYNLIB_ONCE_INIT(HWLOCFN_SONAME, &hwlocfn_spec, &hwlocfn_table);

static void hwlocfn_init(void)
{
	dynlib_once_run(&hwlocfn_loaded);
}

enum status hwlocfn_load(const struct hwlocfn **out, struct status_info *si)
{
	enum status st;

	*out = dynlib_once(&hwlocfn_loaded, hwlocfn_init, &st, si);
	return st;
}

enum status hwlocfn_load_from(const char *soname, struct hwlocfn *t, struct status_info *si)
{
	return dynlib_load(soname, &hwlocfn_spec, t, si);
}
