/*
 * reply.h - whole HTTP answers in the shapes the simulated servers send:
 * a body, a JSON document, an error body, a {"detail"} (FastAPI's own
 * errors), and JSON numbers as llama-server writes them.
 */
#ifndef TTSIM_REPLY_H
#define TTSIM_REPLY_H

#include <stddef.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

struct ttsim_server;

/* Queues body (copied) with code and Content-Type ctype. */
enum MHD_Result ttsim_reply_send(struct MHD_Connection *conn, unsigned code, const char *ctype,
			   const char *body, size_t len);
/* Queues j, unformatted, as application/json. */
enum MHD_Result ttsim_reply_json(struct MHD_Connection *conn, unsigned code, cJSON *j);
/* Queues the configured server's error body; param names the field, NULL
 * for none. */
enum MHD_Result ttsim_reply_error(const struct ttsim_server *srv, struct MHD_Connection *conn,
			    unsigned code, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Queues {"detail":"..."}: detail must need no JSON escaping. */
enum MHD_Result ttsim_reply_detail(struct MHD_Connection *conn, unsigned code, const char *detail);
/* v as nlohmann::json dumps a double, in buf (n bytes); returns buf. */
const char *ttsim_reply_jnum(double v, char *buf, size_t n);

#endif
