/*
 * mhdfn.h - libmicrohttpd, loaded when `ttaudit watch` starts serving
 * (dynlib.h): the functions watch/serve.c calls, as a table.
 *
 * Call through the table (`mf->start_daemon(...)`), never by MHD's names:
 * ttaudit does not link libmicrohttpd, and a call by name would bring it
 * back. <microhttpd.h> still gives the types and constants.
 */
#ifndef TTAUDIT_MHDFN_H
#define TTAUDIT_MHDFN_H

#include <microhttpd.h>

#include "base/status.h"

/* The soname of Debian bookworm's libmicrohttpd12 (0.9.75); microhttpd's
 * headers do not give it. */
#define MHDFN_SONAME "libmicrohttpd.so.12"

/* Each member is the MHD_<member> of <microhttpd.h> (mhdfn.c checks the types). */
struct mhdfn {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc, void *apc_cls,
					   MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *daemon);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *daemon,
						       enum MHD_DaemonInfoType info_type, ...);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							    enum MHD_ResponseMemoryMode mode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *response, const char *header,
					       const char *content);
	enum MHD_Result (*queue_response)(struct MHD_Connection *connection, unsigned int status_code,
					  struct MHD_Response *response);
	void (*destroy_response)(struct MHD_Response *response);
};

/*
 * Loads MHDFN_SONAME once per process and gives its table in *out (static,
 * never freed; NULL on failure). STATUS_NOTFOUND when it cannot be loaded:
 * si says why and which package installs it, to every caller.
 */
enum status mhdfn_load(const struct mhdfn **out, struct status_info *si);

/* mhdfn_load's work without the once: `soname` into t (dynlib_load). For
 * tests, which load a soname that does not exist. */
enum status mhdfn_load_from(const char *soname, struct mhdfn *t, struct status_info *si);

#endif
