/*
 * audit.c - the merge audit writer (see audit.h).
 */
#include "tools/ttsim/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/ttsim/log.h"

/* A merge line for 512 slots with ids of 64 bytes fits easily. */
#define AUDIT_LINE_MAX (512u * 1024u)

struct ttsim_audit {
	int fd;                  /* where lines go */
	bool own_fd;             /* opened by ttsim_audit_open */
	bool prefixed;           /* log-line form */
	const char *tag;         /* engine-pipe form: this literal before MERGE_AUDIT; NULL none */
	char *buf;               /* the line being built, AUDIT_LINE_MAX bytes */
	size_t len;              /* bytes used in buf */
	bool overflow;           /* the line hit the cap: it is dropped */
	unsigned long long n_events, n_lost;
};

struct ttsim_audit *ttsim_audit_new_fd(int fd, bool prefixed)
{
	struct ttsim_audit *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->buf = malloc(AUDIT_LINE_MAX);
	if (!a->buf) {
		free(a);
		return NULL;
	}
	a->fd = fd;
	a->prefixed = prefixed;
	return a;
}

enum status ttsim_audit_open(const char *path, bool prefixed, struct ttsim_audit **out,
			     struct status_info *si)
{
	int fd = -1;
	struct ttsim_audit *a = NULL;

	*out = NULL;
	if (!strcmp(path, "-")) {
		fd = STDOUT_FILENO;
	} else {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return status_set_at(si, STATUS_IO, path, 0, 0, "cannot create: %s",
					     strerror(errno));
	}
	a = ttsim_audit_new_fd(fd, prefixed);
	if (!a) {
		if (fd != STDOUT_FILENO)
			close(fd);
		return status_set(si, STATUS_NOMEM, "audit writer: out of memory");
	}
	a->own_fd = fd != STDOUT_FILENO;
	*out = a;
	return STATUS_OK;
}

void ttsim_audit_set_tag(struct ttsim_audit *a, const char *tag)
{
	a->tag = tag;
}

void ttsim_audit_free(struct ttsim_audit *a)
{
	if (!a)
		return;
	if (a->own_fd)
		close(a->fd);
	free(a->buf);
	free(a);
}

unsigned long long ttsim_audit_events(const struct ttsim_audit *a)
{
	return a ? a->n_events : 0;
}

unsigned long long ttsim_audit_lost(const struct ttsim_audit *a)
{
	return a ? a->n_lost : 0;
}

static void audit_put(struct ttsim_audit *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void audit_put(struct ttsim_audit *a, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (a->overflow)
		return;
	va_start(ap, fmt);
	w = vsnprintf(a->buf + a->len, AUDIT_LINE_MAX - a->len, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= AUDIT_LINE_MAX - a->len - 2) {
		a->overflow = true;
		return;
	}
	a->len += (size_t)w;
}

/* A JSON string or null; ids are ours, but escape anyway. */
static void audit_str(struct ttsim_audit *a, const char *s)
{
	const char *p;

	if (!s) {
		audit_put(a, "null");
		return;
	}
	audit_put(a, "\"");
	for (p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			audit_put(a, "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			audit_put(a, "\\u%04x", (unsigned char)*p);
		else
			audit_put(a, "%c", *p);
	}
	audit_put(a, "\"");
}

static void audit_begin(struct ttsim_audit *a, const char *ev)
{
	a->len = 0;
	a->overflow = false;
	if (a->tag) {
		audit_put(a, "%sMERGE_AUDIT ", a->tag);
	} else if (a->prefixed) {
		a->len = ttsim_log_prefix("INFO", "generator.py:1930", a->buf, AUDIT_LINE_MAX);
		audit_put(a, "MERGE_AUDIT ");
	}
	audit_put(a, "{\"ev\":\"%s\"", ev);
}

static void audit_end(struct ttsim_audit *a)
{
	if (a->overflow) {
		a->n_lost++;
		return;
	}
	a->buf[a->len++] = '}';
	a->buf[a->len++] = '\n';
	if (ttsim_log_write_all(a->fd, a->buf, a->len) < 0)
		a->n_lost++;
	else
		a->n_events++;
}

void ttsim_audit_config(struct ttsim_audit *a, int slots, long long max_model_len,
			const char *arm, unsigned long long seed, const char *generator,
			const char *trace_key, double host_sampling, const int *buckets,
			int n_buckets)
{
	int i;

	if (!a)
		return;
	audit_begin(a, "config");
	audit_put(a, ",\"slots\":%d,\"max_model_len\":%lld,\"arm\":", slots, max_model_len);
	audit_str(a, arm);
	audit_put(a, ",\"seed\":%llu,\"generator\":", seed);
	audit_str(a, generator);
	audit_put(a, ",\"trace_key\":");
	audit_str(a, trace_key);
	audit_put(a, ",\"host_sampling\":%g,\"decode_buckets\":[", host_sampling);
	for (i = 0; i < n_buckets; i++)
		audit_put(a, i ? ",%d" : "%d", buckets[i]);
	audit_put(a, "],\"source\":\"ttsim\"");
	audit_end(a);
}

static void audit_ll_array(struct ttsim_audit *a, const char *key, const long long *v, size_t n)
{
	size_t i;

	audit_put(a, ",\"%s\":[", key);
	for (i = 0; i < n; i++)
		audit_put(a, i ? ",%lld" : "%lld", v[i]);
	audit_put(a, "]");
}

static void audit_int_array(struct ttsim_audit *a, const char *key, const int *v, size_t n)
{
	size_t i;

	audit_put(a, ",\"%s\":[", key);
	for (i = 0; i < n; i++)
		audit_put(a, i ? ",%d" : "%d", v[i]);
	audit_put(a, "]");
}

static void audit_str_array(struct ttsim_audit *a, const char *key, const char *const *v,
			    size_t n)
{
	size_t i;

	audit_put(a, ",\"%s\":[", key);
	for (i = 0; i < n; i++) {
		if (i)
			audit_put(a, ",");
		audit_str(a, v[i]);
	}
	audit_put(a, "]");
}

void ttsim_audit_merge(struct ttsim_audit *a, const struct ttsim_merge *m)
{
	size_t i, n_pre = 0;

	if (!a)
		return;
	audit_begin(a, "merge");
	audit_put(a, ",\"step\":%lld,\"reset_batch\":%s,\"mode_switched\":%s", m->step,
		  m->reset_batch ? "true" : "false", m->mode_switched ? "true" : "false");
	if (m->has_dp)
		audit_put(a, ",\"dp\":%d", m->dp);
	audit_ll_array(a, "host_pos", m->host_pos, m->n_host);
	audit_ll_array(a, "dev_pos", m->dev_pos, m->n_dev);
	if (m->host_tok)
		audit_int_array(a, "host_tok", m->host_tok, m->n_host);
	if (m->dev_tok)
		audit_int_array(a, "dev_tok", m->dev_tok, m->n_dev);
	if (m->prefilled) {
		audit_put(a, ",\"prefilled\":[");
		for (i = 0; i < m->n_host; i++)
			if (m->prefilled[i])
				audit_put(a, n_pre++ ? ",%zu" : "%zu", i);
		audit_put(a, "]");
	}
	if (m->has_buf_step)
		audit_put(a, ",\"buf_step\":%lld", m->buf_step);
	if (m->has_gen)
		audit_put(a, ",\"gen\":%lld,\"buf_gen\":%lld", m->gen, m->buf_gen);
	if (m->slot_gen)
		audit_ll_array(a, "slot_gen", m->slot_gen, m->n_host);
	if (m->buf_slot_gen)
		audit_ll_array(a, "buf_slot_gen", m->buf_slot_gen, m->n_host);
	if (m->slot_req)
		audit_str_array(a, "slot_req", m->slot_req, m->n_host);
	if (m->buf_req)
		audit_str_array(a, "buf_req", m->buf_req, m->n_host);
	if (m->taken) {
		audit_put(a, ",\"taken\":[");
		for (i = 0; i < m->n_host; i++)
			audit_put(a, "%s%s", i ? "," : "", m->taken[i] ? "true" : "false");
		audit_put(a, "]");
	}
	if (m->fallback) {
		audit_put(a, ",\"fallback\":");
		audit_str(a, m->fallback);
	}
	if (m->arm) {
		audit_put(a, ",\"arm\":");
		audit_str(a, m->arm);
	}
	if (m->t > 0)
		audit_put(a, ",\"t\":%.6f", m->t);
	audit_end(a);
}

void ttsim_audit_prefill(struct ttsim_audit *a, long long step, int slot, const char *req,
			 int prompt_tokens, int cached_tokens)
{
	if (!a)
		return;
	audit_begin(a, "prefill");
	audit_put(a, ",\"step\":%lld,\"slots\":[%d],\"req\":", step, slot);
	audit_str(a, req);
	audit_put(a, ",\"prompt_tokens\":%d,\"cached_tokens\":%d", prompt_tokens, cached_tokens);
	audit_end(a);
}

void ttsim_audit_decode(struct ttsim_audit *a, long long step, const int *slots, size_t n)
{
	if (!a)
		return;
	audit_begin(a, "decode");
	audit_put(a, ",\"step\":%lld", step);
	audit_int_array(a, "slots", slots, n);
	audit_end(a);
}

void ttsim_audit_trace(struct ttsim_audit *a, long long step, const char *op, const char *key, int dp)
{
	if (!a)
		return;
	audit_begin(a, "trace");
	audit_put(a, ",\"step\":%lld,\"op\":", step);
	audit_str(a, op);
	audit_put(a, ",\"key\":");
	audit_str(a, key);
	if (dp >= 0)
		audit_put(a, ",\"dp\":%d", dp);
	audit_end(a);
}

void ttsim_audit_gate(struct ttsim_audit *a, long long step, bool declared, const char *reason)
{
	if (!a)
		return;
	audit_begin(a, "gate");
	audit_put(a, ",\"step\":%lld,\"keep\":false%s,\"force\":false,\"reason\":", step,
		  declared ? ",\"supports_async_decode\":false" : "");
	audit_str(a, reason);
	audit_end(a);
}

void ttsim_audit_request(struct ttsim_audit *a, const char *phase, const char *req, int slot,
			 long long step, int n_tokens, int n_subs, bool aborted)
{
	if (!a)
		return;
	audit_begin(a, "request");
	audit_put(a, ",\"phase\":\"%s\",\"req\":", phase);
	audit_str(a, req);
	audit_put(a, ",\"slot\":%d,\"step\":%lld", slot, step);
	if (!strcmp(phase, "finish"))
		audit_put(a, ",\"tokens\":%d,\"substitutions\":%d,\"aborted\":%s", n_tokens, n_subs,
			  aborted ? "true" : "false");
	audit_end(a);
}

void ttsim_audit_defect(struct ttsim_audit *a, const char *mode, long long step, int slot,
			const char *req, const char *from, int index, long long tok)
{
	if (!a)
		return;
	audit_begin(a, "defect");
	audit_put(a, ",\"mode\":\"%s\",\"step\":%lld,\"slot\":%d,\"req\":", mode, step, slot);
	audit_str(a, req);
	audit_put(a, ",\"from\":");
	if (from)
		audit_str(a, from);
	else
		audit_put(a, "null");
	audit_put(a, ",\"index\":%d,\"tok\":%lld", index, tok);
	audit_end(a);
}
