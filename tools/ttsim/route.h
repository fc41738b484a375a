/*
 * route.h - libmicrohttpd's callbacks for ttsim's server: every request
 * (the access handler) and the end of each (request completed).
 */
#ifndef TTSIM_ROUTE_H
#define TTSIM_ROUTE_H

#include <stddef.h>

#include <microhttpd.h>

/* MHD_AccessHandlerCallback; cls is the server. */
enum MHD_Result ttsim_route_handler(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version,
			      const char *upload_data, size_t *upload_data_size, void **con_cls);
/* MHD_RequestCompletedCallback; cls is the server. */
void ttsim_route_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		     enum MHD_RequestTerminationCode toe);

#endif
