/*
 * serve.h - the HTTP side of `ttaudit watch` (libmicrohttpd, one thread of
 * its own): GET /metrics (the exposition, text format 0.0.4), GET /health
 * (200 "ok" with the sources up, for the scraper and a load balancer),
 * anything else 404.
 */
#ifndef TTAUDIT_SERVE_H
#define TTAUDIT_SERVE_H

#include "base/status.h"
#include "watch/watch.h"

struct serve;

/*
 * Listens on `listen` ("HOST:PORT", an IPv4 address; port 0 picks a free
 * one). STATUS_USAGE for an address that does not parse, STATUS_IO when it
 * cannot be bound (si says why), STATUS_NOTFOUND when libmicrohttpd cannot
 * be loaded (watch/mhdfn.h). w must outlive the server.
 */
enum status serve_start(struct serve **out, struct watch *w, const char *listen,
			struct status_info *si);
/* The port listened on (the one picked, for port 0). */
unsigned serve_port(const struct serve *s);
void serve_stop(struct serve *s);

#endif
