/*
 * mhdfn.c - libmicrohttpd's table (mhdfn.h), filled by dlopen once per
 * process.
 */
#include "watch/mhdfn.h"
#include "base/dynlib.h"

#include <stddef.h>

/* Every member of struct mhdfn, once: the symbol list and the type checks
 * are made from it. */
#define MHDFN_EACH(X) \
	X(start_daemon) X(stop_daemon) X(get_daemon_info) X(create_response_from_buffer) \
	X(add_response_header) X(queue_response) X(destroy_response)

/* Its entries, each checked against the header (dynlib.h). */
#define MHDFN_CHECK(f) DYNLIB_CHECK(struct mhdfn, f, MHD_##f);
MHDFN_EACH(MHDFN_CHECK)
#define MHDFN_SYM(f) DYNLIB_SYM(struct mhdfn, f, MHD_##f),
static const struct dynlib_sym mhdfn_syms[] = { MHDFN_EACH(MHDFN_SYM) };
DYNLIB_COMPLETE(mhdfn_syms, struct mhdfn);

static const struct dynlib_spec mhdfn_spec = {
	.package = "libmicrohttpd12", .syms = mhdfn_syms,
	.n_syms = sizeof(mhdfn_syms) / sizeof(mhdfn_syms[0]), .table_size = sizeof(struct mhdfn)
};

static struct mhdfn mhdfn_table;
static struct dynlib_once mhdfn_loaded =
	DYNLIB_ONCE_INIT(MHDFN_SONAME, &mhdfn_spec, &mhdfn_table);

static void mhdfn_init(void)
{
	dynlib_once_run(&mhdfn_loaded);
}

enum status mhdfn_load(const struct mhdfn **out, struct status_info *si)
{
	enum status st;

	*out = dynlib_once(&mhdfn_loaded, mhdfn_init, &st, si);
	return st;
}

enum status mhdfn_load_from(const char *soname, struct mhdfn *t, struct status_info *si)
{
	return dynlib_load(soname, &mhdfn_spec, t, si);
}
