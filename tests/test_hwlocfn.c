/*
 * test_hwlocfn.c - hwloc's table (host/hwlocfn.c): the binary does not
 * link libhwloc, so the load is what brings it in; every pointer is set and
 * reads a fixture topology (two Tenstorrent devices, fixtures/preflight);
 * a soname that does not exist is refused with its name, dlerror's reason
 * and the package to install.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <cmocka.h>

#include "host/hwlocfn.h"
#include "tests/testutil.h"

static void test_load(void **state)
{
	const struct hwlocfn *hf = NULL, *again = NULL;
	struct status_info si = { 0 };
	const char *fx = getenv("TTAUDIT_FIXTURES");
	char xml[600];
	hwloc_topology_t topo;
	hwloc_obj_t obj;
	unsigned n_tt = 0, k;
	int depth;

	(void)state;
	assert_null(dlopen(HWLOCFN_SONAME, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(hwlocfn_load(&hf, &si), STATUS_OK);
	assert_non_null(hf);
	assert_non_null(dlopen(HWLOCFN_SONAME, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(testutil_null_fns(hf, sizeof(*hf)), 0);
	assert_int_equal(hwlocfn_load(&again, NULL), STATUS_OK);
	assert_ptr_equal(again, hf);
	assert_int_equal(hf->topology_init(&topo), 0);
	snprintf(xml, sizeof(xml), "%s/preflight/topo-2dev.xml", fx ? fx : "fixtures");
	assert_int_equal(hf->topology_set_xml(topo, xml), 0);
	assert_int_equal(hf->topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL), 0);
	assert_int_equal(hf->topology_load(topo), 0);
	depth = hf->get_type_depth(topo, HWLOC_OBJ_PCI_DEVICE);
	assert_int_equal(depth, HWLOC_TYPE_DEPTH_PCI_DEVICE);
	for (k = 0; (obj = hf->get_obj_by_depth(topo, depth, k)); k++)
		n_tt += obj->attr->pcidev.vendor_id == 0x1e52;
	assert_int_equal(n_tt, 2);
	obj = hf->get_obj_by_depth(topo, depth, 0);
	while (obj && !obj->cpuset)
		obj = obj->parent;
	assert_non_null(obj);
	assert_true(hf->bitmap_first(obj->nodeset) >= 0);
	assert_int_equal(hf->bitmap_next(obj->nodeset, 1 << 20), -1);
	hf->topology_destroy(topo);
}

static void test_missing(void **state)
{
	struct hwlocfn t;
	struct status_info si = { 0 };

	(void)state;
	memset(&t, 0xff, sizeof(t));
	assert_int_equal(hwlocfn_load_from("libhwloc-ttaudit-missing.so.15", &t, &si), STATUS_NOTFOUND);
	assert_int_equal(testutil_null_fns(&t, sizeof(t)), sizeof(t) / sizeof(void (*)(void)));
	assert_non_null(strstr(si.msg, "libhwloc-ttaudit-missing.so.15 cannot be loaded: "
				       "libhwloc-ttaudit-missing.so.15: cannot open shared object file"));
	assert_non_null(strstr(si.msg, "; install libhwloc15 (Debian)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
