/*
 * driver_gate.c - the gate of every server of a bench run (driver_priv.h):
 * the readiness ladder must pass, and a named arm must be confirmed from the
 * server's own output (or is recorded unconfirmed with --no-arm-check)
 * before any record is written.
 */
#include "bench/driver_priv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe/http.h"
#include "probe/ready.h"
#include "bench/srvmetrics.h"

void driver_say(const struct driver_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->log_to)
		return;
	va_start(ap, fmt);
	vfprintf(o->log_to, fmt, ap);
	va_end(ap);
	fputc('\n', o->log_to);
}

#define DRIVER_ARM_SETTLE_TRIES 20        /* 20 x 0.15 s: 3 s at most */
#define DRIVER_ARM_SETTLE_NS 150000000L

/* 1 when the check failed only for want of required lines a log or capture may still receive. */
static int driver_arm_in_flight(const struct arm_result *r)
{
	size_t i;
	int absent = 0;

	for (i = 0; i < r->n_items; i++) {
		const struct arm_item_result *it = &r->items[i];

		if (it->verdict == ARM_FORBIDDEN_PRESENT)
			return 0;
		/* a line, or the start record that holds a process's environment */
		if (it->verdict == ARM_ABSENT && !it->forbid && (it->kind == ARM_LOG || it->kind == ARM_ENV))
			absent = 1;
		else if (it->verdict == ARM_ABSENT || it->verdict == ARM_UNREACHABLE)
			return 0;
	}
	return absent;
}

enum status driver_gate(struct driver_ctx *c, size_t a, struct arm_spec *spec, bool *passed,
			struct status_info *si)
{
	const struct driver_opts *o = c->o;
	const struct driver_arm *da = &o->arms[a];
	struct driver_arm_state *s = &c->as[a];
	struct driver_arm_info *info = &c->rep->arms[a];
	struct ready_opts ro;
	struct ready_report rr;
	struct arm_sources src;
	struct arm_result *ar = NULL;
	struct http_response res;
	struct status_info esi;
	enum status st;
	char *buf = NULL, idp[64];
	size_t bufsz = 0, k;
	FILE *mf;

	*passed = false;
	s->id.tool_version = TTAUDIT_VERSION;
	s->id.url = da->url;
	s->id.arm = da->arm;
	s->id.host = c->host;
	snprintf(info->url, sizeof(info->url), "%s", da->url);
	snprintf(info->arm, sizeof(info->arm), "%s", da->arm ? da->arm : "");
	info->arm_state = "none";
	memset(&ro, 0, sizeof(ro));
	ro.url = da->url;
	ro.model = o->model;
	ro.timeout = o->ready_timeout;
	ro.interval = 0.2;
	snprintf(idp, sizeof(idp), "%016" PRIx64 "-a%zu", o->corpus_seed, a);
	ro.request_id_prefix = idp;
	status_info_clear(&esi);
	st = ready_wait(&ro, &rr, &esi);
	s->ready_json = ready_report_json(&rr);
	if (st) {
		c->rep->gate_failed = true;
		snprintf(c->rep->gate_message, sizeof(c->rep->gate_message),
			 "%s: not ready: rung %s did not pass: %s", da->url, ready_rung_name(rr.failed),
			 rr.rung[rr.failed < READY__COUNT ? rr.failed : 0].last_error[0]
				 ? rr.rung[rr.failed < READY__COUNT ? rr.failed : 0].last_error : esi.msg);
		return STATUS_OK;
	}
	s->id.ready = true;
	s->id.ready_json = s->ready_json;
	snprintf(s->model, sizeof(s->model), "%s", rr.model);
	s->id.model = s->model;
	snprintf(info->model, sizeof(info->model), "%s", rr.model);
	driver_say(o, "%s: ready in %.1f s, model %s", da->url, rr.total, rr.model);
	/* the server configuration, from its *_info samples */
	if (!srvmetrics_get(da->url, &res, NULL) &&
	    !srvmetrics_config_hash(res.body, res.n_body, s->config_hash, sizeof(s->config_hash), NULL) &&
	    s->config_hash[0]) {
		s->id.config_hash = s->config_hash;
		snprintf(info->config_hash, sizeof(info->config_hash), "%s", s->config_hash);
	}
	http_response_release(&res);
	if (!da->arm) {
		s->id.arm_state = RECORD_ARM_NONE;
		*passed = true;
		return STATUS_OK;
	}
	if (o->no_arm_check) {
		s->id.arm_state = RECORD_ARM_UNCONFIRMED;
		info->arm_state = "unconfirmed";
		driver_say(o, "arm '%s' at %s: not checked (--no-arm-check), records say unconfirmed",
			   da->arm, da->url);
		*passed = true;
		return STATUS_OK;
	}
	ar = calloc(1, sizeof(*ar));
	if (!ar)
		return status_set(si, STATUS_NOMEM, "out of memory");
	memset(&src, 0, sizeof(src));
	src.url = da->url;
	src.log = da->log;
	src.capture = da->capture;
	st = arm_check(spec, da->arm, &src, ar, si);
	/* A server's log and capture are written while it runs, by its processes
	 * in their own time: a start-up line the engine process has not written
	 * yet when the API already answers is in flight, not absent. Only what
	 * is missing is waited for, a little; forbidden evidence already found
	 * never waits. */
	for (k = 0; !st && !ar->confirmed && (da->log || da->capture) && k < DRIVER_ARM_SETTLE_TRIES &&
		    driver_arm_in_flight(ar); k++) {
		struct timespec ts = { 0, DRIVER_ARM_SETTLE_NS };

		nanosleep(&ts, NULL);
		st = arm_check(spec, da->arm, &src, ar, si);
	}
	if (st) {
		free(ar);
		return st;
	}
	s->arm_json = arm_result_json(ar);
	s->id.arm_evidence = s->arm_json;
	if (!ar->confirmed) {
		s->id.arm_state = RECORD_ARM_FAILED;
		info->arm_state = "failed";
		c->rep->gate_failed = true;
		snprintf(c->rep->gate_message, sizeof(c->rep->gate_message),
			 "arm '%s' at %s: FAIL, not confirmed by the server's output; no record written",
			 da->arm, da->url);
		mf = open_memstream(&buf, &bufsz);
		if (mf) {
			arm_result_print(ar, mf);
			fclose(mf);
			free(c->rep->arm_report);
			c->rep->arm_report = buf;
		}
		free(ar);
		return STATUS_OK;
	}
	free(ar);
	s->id.arm_state = RECORD_ARM_CONFIRMED;
	info->arm_state = "confirmed";
	driver_say(o, "arm '%s' at %s: CONFIRMED", da->arm, da->url);
	*passed = true;
	return STATUS_OK;
}
