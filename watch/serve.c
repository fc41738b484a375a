/*
 * serve.c - /metrics and /health of `ttaudit watch` over libmicrohttpd (serve.h).
 */
#include "watch/serve.h"
#include "watch/mhdfn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct serve {
	const struct mhdfn *mf;     /* libmicrohttpd's functions */
	struct MHD_Daemon *d;
	struct watch *w;
	unsigned port;
};

static enum MHD_Result serve_reply(const struct serve *s, struct MHD_Connection *c, unsigned code,
				   const char *type, char *body, size_t n)
{
	struct MHD_Response *r = s->mf->create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	s->mf->add_response_header(r, "Content-Type", type);
	ret = s->mf->queue_response(c, code, r);
	s->mf->destroy_response(r);
	return ret;
}

static enum MHD_Result serve_answer(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	struct serve *s = cls;
	char *body = NULL;
	size_t n = 0;
	FILE *f;

	(void)version;
	(void)upload;
	if (!*con_cls) {
		/* the first call only announces the request */
		*con_cls = s;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return serve_reply(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", strdup("GET only\n"), 9);
	if (!strcmp(url, "/metrics")) {
		f = open_memstream(&body, &n);
		if (!f)
			return MHD_NO;
		if (watch_write_metrics(s->w, f) || fclose(f)) {
			free(body);
			return MHD_NO;
		}
		return serve_reply(s, c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, n);
	}
	if (!strcmp(url, "/health")) {
		size_t up, total;
		char buf[96];
		int k;

		watch_health(s->w, &up, &total);
		k = snprintf(buf, sizeof(buf), "ok: %zu of %zu sources up\n", up, total);
		return serve_reply(s, c, MHD_HTTP_OK, "text/plain", strdup(buf), (size_t)k);
	}
	return serve_reply(s, c, MHD_HTTP_NOT_FOUND, "text/plain", strdup("not found: /metrics or /health\n"),
			   31);
}

enum status serve_start(struct serve **out, struct watch *w, const char *listen,
			struct status_info *si)
{
	struct sockaddr_in sin;
	const char *colon = strrchr(listen, ':');
	char host[64];
	char *end;
	long port;
	struct serve *s;
	const struct mhdfn *mf;
	const union MHD_DaemonInfo *info;
	enum status st;

	*out = NULL;
	if (!colon || (size_t)(colon - listen) >= sizeof(host))
		return status_set(si, STATUS_USAGE, "--listen wants HOST:PORT, not '%s'", listen);
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	if (!colon[1] || *end || errno || port < 0 || port > 65535 ||
	    inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &sin.sin_addr) != 1)
		return status_set(si, STATUS_USAGE, "--listen wants an IPv4 HOST:PORT, not '%s'", listen);
	sin.sin_port = htons((uint16_t)port);
	st = mhdfn_load(&mf, si);
	if (st)
		return st;
	s = calloc(1, sizeof(*s));
	if (!s)
		return status_set(si, STATUS_NOMEM, "out of memory");
	s->mf = mf;
	s->w = w;
	s->d = mf->start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port, NULL, NULL,
				serve_answer, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
	if (!s->d) {
		free(s);
		return status_set(si, STATUS_IO, "cannot listen on %s: %s", listen,
				  errno ? strerror(errno) : "the address is taken or not ours");
	}
	info = mf->get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : (unsigned)port;
	*out = s;
	return STATUS_OK;
}

unsigned serve_port(const struct serve *s)
{
	return s->port;
}

void serve_stop(struct serve *s)
{
	if (!s)
		return;
	s->mf->stop_daemon(s->d);
	free(s);
}
