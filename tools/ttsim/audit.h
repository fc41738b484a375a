/*
 * audit.h - ttsim's merge audit writer: the events of the audit spec
 * (config, merge with every ground-truth field, prefill, decode, request),
 * one JSON object per line, either plain (a file) or as log lines
 * "INFO ... [generator.py:1930] MERGE_AUDIT {...}" (a server's stderr).
 *
 * Not thread-safe: one writer thread (the generator loop) per audit.
 */
#ifndef TTSIM_AUDIT_H
#define TTSIM_AUDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/ttsim/guard.h"
#include "base/status.h"

struct ttsim_audit;

/* Creates (truncates) `path`; "-" is stdout. *out is freed with ttsim_audit_free. */
enum status ttsim_audit_open(const char *path, bool prefixed, struct ttsim_audit **out,
			     struct status_info *si);
/* Writes to fd, which stays the caller's. NULL on allocation failure. */
struct ttsim_audit *ttsim_audit_new_fd(int fd, bool prefixed);
/* Lines begin with `tag` (a static string) instead of the log prefix: the
 * engine process's pipe form, which adds its own (main.c). */
void ttsim_audit_set_tag(struct ttsim_audit *a, const char *tag);
/* Closes the file if ttsim_audit_open opened it. NULL is fine. */
void ttsim_audit_free(struct ttsim_audit *a);

/* The first event: the batch and the keep's configuration (generator path,
 * trace keying, host-sampling rate, decode buckets: n_buckets 0 = padded). */
void ttsim_audit_config(struct ttsim_audit *a, int slots, long long max_model_len,
			const char *arm, unsigned long long seed, const char *generator,
			const char *trace_key, double host_sampling, const int *buckets,
			int n_buckets);
void ttsim_audit_merge(struct ttsim_audit *a, const struct ttsim_merge *m);
void ttsim_audit_prefill(struct ttsim_audit *a, long long step, int slot, const char *req,
			 int prompt_tokens, int cached_tokens);
void ttsim_audit_decode(struct ttsim_audit *a, long long step, const int *slots, size_t n);
/* A capture point of the buffer the keep reads (interfaces: `trace`, context
 * only): op "replay" or "restage", the trace key as text; dp < 0: none. */
void ttsim_audit_trace(struct ttsim_audit *a, long long step, const char *op, const char *key, int dp);
/* The capability gate's refusal (interfaces: `gate`), at a step where the
 * keep would otherwise have run, as the kit writes it: keep false, force
 * false, supports_async_decode false when the model declares it (declared),
 * left out when it does not. */
void ttsim_audit_gate(struct ttsim_audit *a, long long step, bool declared, const char *reason);
/* phase "start" or "finish" (finish carries the token count and substitutions). */
void ttsim_audit_request(struct ttsim_audit *a, const char *phase, const char *req, int slot,
			 long long step, int n_tokens, int n_subs, bool aborted);

/* Events written, and lines lost to write errors or the line cap. */
unsigned long long ttsim_audit_events(const struct ttsim_audit *a);
unsigned long long ttsim_audit_lost(const struct ttsim_audit *a);

/*
 * Ground truth of a defect mode at work (model.h, TTSIM_FAULT_*): `req`
 * received at output index `index` the token `tok` because of `mode`, from
 * `from`'s state (NULL: no request's). Not a merge: readers count it as
 * another event; tests read it.
 */
void ttsim_audit_defect(struct ttsim_audit *a, const char *mode, long long step, int slot,
			const char *req, const char *from, int index, long long tok);

#endif
