/*
 * hwlocfn.h - hwloc, loaded when preflight first looks for PCI devices
 * (dynlib.h): the functions host/preflight.c calls, as a table.
 *
 * Call through the table (`hf->topology_init(&t)`), never by hwloc's
 * names: ttaudit does not link libhwloc, and a call by name would bring it
 * back. <hwloc.h> still gives the types and constants, but not its inline
 * helpers (hwloc_get_next_pcidev, hwloc_bitmap_foreach_begin and others
 * call hwloc's symbols from the caller's object): walk the objects with
 * the table's get_type_depth, get_obj_by_depth, bitmap_first and
 * bitmap_next instead.
 */
#ifndef TTAUDIT_HWLOCFN_H
#define TTAUDIT_HWLOCFN_H

#include <hwloc.h>

#include "base/status.h"

/* The soname of hwloc 2.x, installed by Debian's libhwloc15. */
#define HWLOCFN_SONAME "libhwloc.so.15"

/* Each member is the hwloc_<member> of <hwloc.h> (hwlocfn.c checks the types). */
struct hwlocfn {
	int (*topology_init)(hwloc_topology_t *topologyp);
	int (*topology_set_xml)(hwloc_topology_t topology, const char *xmlpath);
	int (*topology_set_io_types_filter)(hwloc_topology_t topology, enum hwloc_type_filter_e filter);
	int (*topology_load)(hwloc_topology_t topology);
	void (*topology_destroy)(hwloc_topology_t topology);
	int (*get_type_depth)(hwloc_topology_t topology, hwloc_obj_type_t type);
	hwloc_obj_t (*get_obj_by_depth)(hwloc_topology_t topology, int depth, unsigned idx);
	int (*bitmap_first)(hwloc_const_bitmap_t bitmap);
	int (*bitmap_next)(hwloc_const_bitmap_t bitmap, int prev);
};

/*
 * Loads HWLOCFN_SONAME once per process and gives its table in *out
 * (static, never freed; NULL on failure). STATUS_NOTFOUND when it cannot be
 * loaded: si says why and which package installs it, to every caller.
 */
enum status hwlocfn_load(const struct hwlocfn **out, struct status_info *si);

/* hwlocfn_load's work without the once: `soname` into t (dynlib_load).
 * For tests, which load a soname that does not exist. */
enum status hwlocfn_load_from(const char *soname, struct hwlocfn *t, struct status_info *si);

#endif
