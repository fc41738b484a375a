/*
 * dynlib.c - dlopen and dlsym into a table of function pointers, once per
 * library (dynlib.h).
 */
#include "base/dynlib.h"

#include <dlfcn.h>
#include <string.h>

/* dlsym gives an object pointer; POSIX requires it to convert to a
 * function pointer, stored here byte for byte. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers are not object-sized");

/* The message of a library that cannot be used, made before dlclose (which
 * may reuse dlerror's buffer). */
static enum status dynlib_fail(const char *soname, const struct dynlib_spec *spec, void *h,
			       void *table, struct status_info *si)
{
	const char *err = dlerror();
	enum status st;

	st = status_set(si, STATUS_NOTFOUND, "%s cannot be loaded: %s; install %s (Debian)", soname,
			err ? err : "no reason given", spec->package);
	if (h)
		dlclose(h);
	memset(table, 0, spec->table_size);
	return st;
}

enum status dynlib_load(const char *soname, const struct dynlib_spec *spec, void *table,
			struct status_info *si)
{
	void *h, *p;
	size_t i;

	memset(table, 0, spec->table_size);
	for (i = 0; i < spec->n_syms; i++)
		if (spec->table_size < sizeof(p) || spec->syms[i].offset > spec->table_size - sizeof(p))
			return status_set(si, STATUS_USAGE, "%s: function '%s' lies outside its table",
					  soname, spec->syms[i].name);
	h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return dynlib_fail(soname, spec, NULL, table, si);
	for (i = 0; i < spec->n_syms; i++) {
		(void)dlerror();
		p = dlsym(h, spec->syms[i].name);
		if (!p)
			return dynlib_fail(soname, spec, h, table, si);
		memcpy((char *)table + spec->syms[i].offset, &p, sizeof(p));
	}
	return STATUS_OK;
}

void dynlib_once_run(struct dynlib_once *o)
{
	o->st = dynlib_load(o->soname, o->spec, o->table, &o->si);
}

void *dynlib_once(struct dynlib_once *o, void (*init)(void), enum status *st,
		  struct status_info *si)
{
	pthread_once(&o->once, init);
	*st = o->st;
	if (o->st && si)
		*si = o->si;
	return o->st ? NULL : o->table;
}
