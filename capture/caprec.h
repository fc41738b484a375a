/*
 * caprec.h - capture records (one JSON object per line, key "src"), formatted
 * into caller-provided buffers. The format is docs/capture.md; in short:
 *
 *   start     t, mono, pid, ppid, argv, exe, host, env, env_redacted, argv_redacted
 *   audit     t, mono, pid, tid, fd, event (the audit object as written), [partial], [invalid_utf8]
 *   banner    t, mono, pid, tid, fd, rule, text, [cut], [partial], [invalid_utf8]
 *   line      t, mono, pid, tid, fd, text, ...  (only when all lines are asked for)
 *   lost      t, pid, [fd], count, reason
 *   uncertain t, mono, pid, [fd], reason, count, [record]
 *   end       t, pid, how, [code | signal], by, [lines, lost]
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

#include "capture/envlist.h"

/* What every record says about where and when a line was seen. */
struct caprec_head {
	struct timespec t;      /* CLOCK_REALTIME */
	struct timespec mono;   /* CLOCK_MONOTONIC */
	long pid;               /* 0: absent (host-side reader) */
	long tid;               /* 0: absent */
	int fd;                 /* -1: absent */
	int partial;            /* line records: the line had no '\n' when its process or fd ended */
};

/* Fills t and mono from the clocks and clears partial; pid, tid, fd are left to the caller. */
void caprec_head_now(struct caprec_head *h);

/*
 * The audit object s[0..n) is embedded as is (the caller has validated it
 * with jdoc_check), except that bytes that are not UTF-8 become \udcNN and
 * are counted in "invalid_utf8".
 */
size_t caprec_audit(char *buf, size_t cap, const struct caprec_head *h, const char *obj, size_t n);
/* A long text is cut to fit, and the record then says "cut":true. */
size_t caprec_banner(char *buf, size_t cap, const struct caprec_head *h, const char *rule,
		     const char *text, size_t n);
size_t caprec_line(char *buf, size_t cap, const struct caprec_head *h, const char *text, size_t n);
size_t caprec_lost(char *buf, size_t cap, const struct caprec_head *h, uint64_t count,
		   const char *reason);
/*
 * A record whose truth is not known (interfaces.md C): `rec` (rec_len bytes,
 * without its newline; NULL for none) is the record that would have been
 * written, embedded as "record". h->fd < 0 leaves "fd" out.
 */
size_t caprec_uncertain(char *buf, size_t cap, const struct caprec_head *h, uint64_t count,
			const char *reason, const char *rec, size_t rec_len);

/* How a process ended, for its end record. */
struct caprec_end {
	const char *how;        /* "exit", "_exit", "signal", "exec", "unknown" */
	int code;               /* exit status, < 0: absent */
	int sig;                /* "signal": the signal number */
	const char *by;         /* "shim", "parent", "capture" */
	int counts;             /* 1: write lines and lost (the process's own count) */
	uint64_t lines, lost;
};
size_t caprec_end(char *buf, size_t cap, const struct caprec_head *h, const struct caprec_end *e);

/*
 * A start record is two parts: the head (src, t, mono, pid, ppid) written
 * per process, and a tail that stays the same across fork and is rendered
 * once. caprec_start_tail renders `"argv":[...],"exe":..,"host":..,"env":{..},
 * "env_redacted":[..],"argv_redacted":[..]}` (no newline). `env` holds
 * allowed names with their values; names that look secret, and names whose
 * value holds URL credentials, are listed in env_redacted with no value.
 * In argv, the value of an option that names a secret (envlist_secret_option)
 * and the credentials of a URL (scheme://user:pass@host) become
 * "<redacted>"; argv_redacted lists each option by name (`argv[N]` for a
 * URL that is not an option's value). An entry that does not fit is left
 * out and "env_cut":true is added.
 * Returns the tail length, 0 when even the fixed part does not fit.
 */
size_t caprec_start_tail(char *buf, size_t cap, char *const *argv, int argc, const char *exe,
			 const char *host, char *const *envp, const struct envlist *allow);
struct banner_set;
/*
 * How the capture was made, a member for the start record's tail:
 * `"capture":{"all_lines":B,"rules_from":"built-in"|FILE,"rules":[names]}`.
 * Without --all-lines only lines the rules match are recorded (banners), so
 * a reader that looks for a line (ttaudit arm) knows whether the capture
 * could hold it. rules NULL: "rules" is absent (not known). Names that do
 * not fit are left out and "rules_cut":true added. Returns the length, 0
 * when it does not fit at all.
 */
size_t caprec_mode(char *buf, size_t cap, int all_lines, const struct banner_set *rules,
		   const char *rules_from);
/*
 * Adds a member (as caprec_mode renders it) to a tail of tail_len bytes
 * in a buffer of cap: returns the new length, or tail_len unchanged when
 * it does not fit.
 */
size_t caprec_tail_add(char *tail, size_t tail_len, size_t cap, const char *member, size_t n);
/* ppid < 0: absent. `tail` as above, or any text that closes the object. */
size_t caprec_start(char *buf, size_t cap, const struct caprec_head *h, long ppid,
		    const char *tail, size_t tail_len);

#endif
