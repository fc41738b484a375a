/*
 * caprec.h - capture records (one JSON object per line, key "src"), formatted
 * into caller-provided buffers. The format is docs/capture.md; in short:
 *
 *   start   t, mono, pid, ppid, argv, exe, host, env, env_redacted
 *   audit   t, mono, pid, tid, fd, event (the audit object, verbatim)
 *   banner  t, mono, pid, tid, fd, rule, text
 *   line    t, mono, pid, tid, fd, text          (only when all lines are asked for)
 *   lost    t, pid, count, reason
 *   end     t, pid, lines, lost
 *
 * Every function writes one whole line ending in '\n' and returns its length,
 * or 0 when it does not fit in `cap` (nothing usable is left in buf then).
 * No allocation, no stdio, no locale: callable on the shim's write path and
 * from a signal handler.
 */
#ifndef TTAUDIT_CAPREC_H
#define TTAUDIT_CAPREC_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "envlist.h"

/* What every record says about where and when a line was seen. */
struct caprec_head {
	struct timespec t;      /* CLOCK_REALTIME */
	struct timespec mono;   /* CLOCK_MONOTONIC */
	long pid;               /* 0: absent (host-side reader) */
	long tid;               /* 0: absent */
	int fd;                 /* -1: absent */
};

/* Fills t and mono from the clocks; pid, tid, fd are left to the caller. */
void caprec_head_now(struct caprec_head *h);

/* The audit object s[0..n) is embedded as is: the caller has validated it. */
size_t caprec_audit(char *buf, size_t cap, const struct caprec_head *h, const char *obj, size_t n);
/* A long text is cut to fit, and the record then says "cut":true. */
size_t caprec_banner(char *buf, size_t cap, const struct caprec_head *h, const char *rule,
		     const char *text, size_t n);
size_t caprec_line(char *buf, size_t cap, const struct caprec_head *h, const char *text, size_t n);
size_t caprec_lost(char *buf, size_t cap, const struct caprec_head *h, uint64_t count,
		   const char *reason);
size_t caprec_end(char *buf, size_t cap, const struct caprec_head *h, uint64_t lines,
		  uint64_t lost);

/*
 * A start record is two parts: the head (src, t, mono, pid, ppid) written
 * per process, and a tail that stays the same across fork and is rendered
 * once. caprec_start_tail renders `"argv":[...],"exe":..,"host":..,"env":{..},
 * "env_redacted":[..]}` (no newline): `env` holds allowed names with their
 * values; names that look secret are listed in env_redacted with no value.
 * An entry that does not fit is left out and "env_cut":true is added.
 * Returns the tail length, 0 when even the fixed part does not fit.
 */
size_t caprec_start_tail(char *buf, size_t cap, char *const *argv, int argc, const char *exe,
			 const char *host, char *const *envp, const struct envlist *allow);
/* ppid < 0: absent. `tail` as above, or any text that closes the object. */
size_t caprec_start(char *buf, size_t cap, const struct caprec_head *h, long ppid,
		    const char *tail, size_t tail_len);

#endif
