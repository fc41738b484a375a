/*
 * dynlib.h - a shared library opened with dlopen(3) the first time a
 * command needs it, its functions resolved into a table of pointers.
 *
 * ttaudit does not link libcurl, libmicrohttpd or hwloc: together they
 * bring some thirty shared objects whose loading every command would pay
 * at start, `ttaudit capture` included. Each of the three has a module
 * that owns its table and loads it once (probe/curlfn.h, watch/mhdfn.h,
 * host/hwlocfn.h); this is the loader they share.
 */
#ifndef TTAUDIT_DYNLIB_H
#define TTAUDIT_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

#include "base/status.h"

/* One function of a table: the library's symbol, and where in the table
 * its pointer goes (offsetof). */
struct dynlib_sym {
	const char *name;
	size_t offset;
};

/* What a table module tells the loader about its library. */
struct dynlib_spec {
	const char *package;           /* the Debian package that installs it ("libcurl4") */
	const struct dynlib_sym *syms; /* every function of the table */
	size_t n_syms;
	size_t table_size;             /* sizeof the table: n_syms function pointers */
};

/*
 * Opens `soname` (RTLD_NOW | RTLD_LOCAL) and fills every pointer of
 * `table` (spec->table_size bytes). On failure: STATUS_NOTFOUND, the table
 * zeroed, the library closed again, and si says "<soname> cannot be loaded:
 * <dlerror()>; install <package> (Debian)" (dlerror names the missing
 * file or symbol). STATUS_USAGE, before any dlopen, when a symbol's offset
 * lies outside the table. A loaded library is never closed.
 */
enum status dynlib_load(const char *soname, const struct dynlib_spec *spec, void *table,
			struct status_info *si);

/*
 * The entries of a table module's symbol list, made from one list of its
 * members: DYNLIB_SYM(struct curlfn, easy_init, curl_easy_init) is the
 * entry of member easy_init, filled from symbol "curl_easy_init".
 * DYNLIB_CHECK(...) with the same arguments (at file scope) is a compile
 * error when the member's type is not the header's prototype of that
 * function; __typeof__ does not evaluate, so it makes no reference to the
 * library's symbol. DYNLIB_COMPLETE(syms, T): every member of T has an
 * entry (a table holds only function pointers).
 */
#define DYNLIB_SYM(T, member, fn) { #fn, offsetof(T, member) }
#define DYNLIB_CHECK(T, member, fn) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&fn), __typeof__(((T *)0)->member)), \
		       #T "." #member " is not the type of " #fn)
#define DYNLIB_COMPLETE(syms, T) \
	_Static_assert(sizeof(syms) / sizeof((syms)[0]) * sizeof(void (*)(void)) == sizeof(T), \
		       "a member of " #T " has no symbol")

/*
 * A library loaded once per process into its table: static storage,
 * initialised with DYNLIB_ONCE_INIT. The module's pthread_once routine
 * calls dynlib_once_run on it.
 */
struct dynlib_once {
	pthread_once_t once;
	const char *soname;
	const struct dynlib_spec *spec;
	void *table;
	enum status st;
	struct status_info si;
};
#define DYNLIB_ONCE_INIT(soname, spec, table) \
	{ PTHREAD_ONCE_INIT, soname, spec, table, STATUS_OK, { { 0 }, 0, 0, { 0 } } }

/* dynlib_load of o's soname into o's table, its result kept in o. */
void dynlib_once_run(struct dynlib_once *o);

/* Runs `init` once for o; returns o's table, or NULL with *st (and si, if
 * not NULL) set to the load's failure, for every caller, not only the
 * first. */
void *dynlib_once(struct dynlib_once *o, void (*init)(void), enum status *st,
		  struct status_info *si);

#endif
