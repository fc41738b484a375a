/*
 * reply.c - whole HTTP answers on a connection: a body as is, a JSON
 * document, each server's error body (vLLM's nested or 0.10's flat,
 * llama-server's), FastAPI's {"detail"}; and numbers as nlohmann::json
 * writes them (see reply.h).
 */
#include "tools/ttsim/reply.h"
#include "tools/ttsim/engine.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum MHD_Result ttsim_reply_send(struct MHD_Connection *conn, unsigned code, const char *ctype,
			   const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result ttsim_reply_json(struct MHD_Connection *conn, unsigned code, cJSON *j)
{
	char *s = cJSON_PrintUnformatted(j);
	enum MHD_Result ret;

	if (!s)
		return MHD_NO;
	ret = ttsim_reply_send(conn, code, "application/json", s, strlen(s));
	free(s);
	return ret;
}

static const char *reply_err_type(unsigned code)
{
	switch (code) {
	case 400: return "BadRequestError";
	case 404: return "NotFoundError";
	case 503: return "ServiceUnavailableError";
	default: return "InternalServerError";
	}
}

/* format_error_response's type for each code llama-server sends. */
static const char *reply_llama_err_type(unsigned code)
{
	switch (code) {
	case 400: return "invalid_request_error";
	case 401: return "authentication_error";
	case 403: return "permission_error";
	case 404: return "not_found_error";
	case 501: return "not_supported_error";
	case 503: return "unavailable_error";
	default: return "server_error";
	}
}

/*
 * The error body each server sends. vLLM since PR #22099 nests it,
 * {"error":{"message","type","param","code"}} (engine/protocol.py ErrorResponse);
 * 0.10 sent {"object":"error","message",...} flat; llama-server
 * {"error":{"code","message","type"}}.
 */
static cJSON *reply_error_body(const struct ttsim_server *srv, unsigned code, const char *param,
			       const char *msg)
{
	cJSON *j = cJSON_CreateObject(), *e = j;

	if (!j)
		return NULL;
	if (srv->c.profile == TTSIM_LLAMACPP) {
		e = cJSON_AddObjectToObject(j, "error");
		cJSON_AddNumberToObject(e, "code", code);
		cJSON_AddStringToObject(e, "message", msg);
		cJSON_AddStringToObject(e, "type", reply_llama_err_type(code));
		return j;
	}
	if (srv->c.vllm_minor == 10)
		cJSON_AddStringToObject(j, "object", "error");
	else
		e = cJSON_AddObjectToObject(j, "error");
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddStringToObject(e, "type", reply_err_type(code));
	if (param)
		cJSON_AddStringToObject(e, "param", param);
	else
		cJSON_AddNullToObject(e, "param");
	cJSON_AddNumberToObject(e, "code", code);
	return j;
}

enum MHD_Result ttsim_reply_error(const struct ttsim_server *srv, struct MHD_Connection *conn,
			    unsigned code, const char *param, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	cJSON *j;
	enum MHD_Result ret;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	j = reply_error_body(srv, code, param, msg);
	if (!j)
		return MHD_NO;
	ret = ttsim_reply_json(conn, code, j);
	cJSON_Delete(j);
	return ret;
}

enum MHD_Result ttsim_reply_detail(struct MHD_Connection *conn, unsigned code, const char *detail)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "{\"detail\":\"%s\"}", detail);

	return ttsim_reply_send(conn, code, "application/json", body, (size_t)n);
}

/* A double as nlohmann::json dumps it: the shortest form that reads back the
 * same, with ".0" when integral; null when not finite. */
const char *ttsim_reply_jnum(double v, char *buf, size_t n)
{
	int p;

	if (!isfinite(v)) {
		snprintf(buf, n, "null");
		return buf;
	}
	for (p = 1; p <= 17; p++) {
		snprintf(buf, n, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".en") && strlen(buf) + 3 <= n)
		strcat(buf, ".0");
	return buf;
}
