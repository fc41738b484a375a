/*
 * replay.h - replays merge audits through the analyzer: reads every file
 * (one after another or in parallel, with the same result), counts per rule
 * and per server process, keeps per-file results for the deployment gate,
 * explains chosen steps, and prints the report (text or JSON).
 *
 * A process is a pid of a capture file, refined by the `rank` and `dp` of its
 * events when they carry them (docs/audit-format.md); the lines of a plain
 * audit are one process. Config, garbage bound, drift and fingerprint are kept
 * per process; a file holding several gets a row for each in the report.
 *
 * Memory stays flat in the number of files: per file only a small record
 * (and, for validate, its counts and substitution sites) is kept.
 */
#ifndef TTAUDIT_REPLAY_H
#define TTAUDIT_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "analyzer/evidence.h"
#include "analyzer/reader.h"
#include "analyzer/rule.h"
#include "base/progress.h"
#include "base/status.h"
#include "analyzer/tally.h"

/* Malformed lines shown one by one before only the total is given. */
#define REPLAY_MALFORMED_SHOWN 10
/* Merge events --explain describes at most (a step may repeat across files). */
#define REPLAY_EXPLAIN_MAX 16
/* Substitution sites kept over all files (each file keeps at most max_sites). */
#define REPLAY_SITES_TOTAL 100000
/* Processes kept apart in one file; the events of more are counted in `processes_dropped`. */
#define REPLAY_MAX_PROCS 4096
/* Abnormal ends (death by a signal) listed; more are counted. */
#define REPLAY_ENDS_SHOWN 64
/* Parallel readers at most (--jobs). */
#define REPLAY_MAX_JOBS 64

struct replay_opts {
	const struct rule *rules;   /* copied; n_rules in [1, RULE_MAX_LIST] */
	size_t n_rules;
	int64_t max_pos;            /* --max-pos; 0 none */
	bool strict;                /* stop at the first malformed line */
	bool explain;
	int64_t explain_step;
	size_t max_line;            /* 0: AUDIT_READER_MAX_LINE */
	unsigned max_depth;         /* JSON nesting; 0: JDOC_MAX_DEPTH */
	uint32_t max_slots;         /* integer array entries; 0: EVENT_MAX_SLOTS */
	bool tree;                  /* read every line into a tree (the reference path; slower) */
	FILE *diag;                 /* malformed-line messages and notes; NULL: stderr */
	bool keep_sites;            /* per-file counts and substitution sites (validate) */
	size_t max_sites;           /* per file; 0: 1000 */
	/*
	 * Bytes read and merges replayed, drawn while the files are read (base/
	 * progress.h; the caller inits and releases it); with --jobs the threads
	 * add to one count and whichever is free draws. NULL: none.
	 */
	struct progress *progress;
};

/* A place where a rule let a substitution through. */
struct replay_site {
	long line;
	int64_t step;
	uint32_t slot;
	size_t rule;
	enum evidence evidence;
};

enum replay_dup {
	REPLAY_DUP_NONE,
	REPLAY_DUP_INODE,           /* the same device and inode as an earlier file */
	REPLAY_DUP_CONTENT,         /* the same content (hash and length) as an earlier file */
};

/* Gate decisions (interfaces: `gate` events). */
struct replay_gate {
	uint64_t events;
	uint64_t refused;           /* keep false: the keep did not run on that step */
	uint64_t forced;            /* keep true with force true: code that ran the keep against the gate (a patch; no upstream revision reads an override) */
};

struct replay_file {
	const char *path;
	bool unreadable;            /* could not be opened or read to the end */
	bool truncated;             /* a gzip stream cut short or corrupt: counts are of what was read */
	bool no_audit;              /* read, and no audit event in it: the wrong file (said on diag) */
	enum replay_dup dup;        /* counted once: this file added nothing */
	size_t dup_of;              /* the earlier file, when dup */
	uint64_t malformed;
	struct audit_reader_stats stats;
	struct replay_gate gate;
	size_t n_procs;             /* processes seen */
	const struct tally_counts *counts;   /* [n_rules]; only with keep_sites, else NULL */
	size_t n_sites;
	struct replay_site *sites;
	uint64_t sites_dropped;
};

/* One process of a file that holds several. */
struct replay_proc_row {
	size_t file;
	bool has_pid, has_rank, has_dp;
	int64_t pid, rank, dp;
	struct replay_gate gate;
	uint64_t events_with_taken;
	uint64_t garbage, float32_like;
	const struct tally_counts *counts;   /* [n_rules] */
};

/* A process a capture says died by a signal. */
struct replay_end {
	size_t file;
	int64_t pid, signal;
	char by[16];
};

struct replay;

/* NULL on allocation failure or a bad rule count. Free with replay_free(). */
struct replay *replay_new(const struct replay_opts *opts);
void replay_free(struct replay *r);

/*
 * Replays one file ("-" for stdin). STATUS_IO: it could not be read, or only
 * in part (a truncated gzip: its lines up to the cut are counted); si says
 * which. STATUS_PARSE/LIMIT: only with opts.strict, the first malformed line
 * (si names it), and the file adds nothing. A file that is the same as an
 * earlier one (device and inode, or content) is counted once, with a note on
 * opts.diag. Malformed lines otherwise go to opts.diag (the first
 * REPLAY_MALFORMED_SHOWN) and are counted.
 */
enum status replay_add_file(struct replay *r, const char *path, struct status_info *si);

/* Called in file order for each file whose replay_add_file would not return STATUS_OK. */
typedef void (*replay_status_fn)(void *ctx, const char *path, enum status st,
				 const struct status_info *si);
/*
 * Replays paths[0..n) with `jobs` readers in parallel (1: one after another).
 * The result, the notes and the order of every message are those of calling
 * replay_add_file on each path in turn. Returns the status of the first file
 * that stopped the run under opts.strict, else STATUS_OK (or STATUS_NOMEM).
 */
enum status replay_add_files(struct replay *r, const char *const *paths, size_t n, unsigned jobs,
			     replay_status_fn fn, void *ctx);

const struct tally *replay_tally(const struct replay *r);
size_t replay_n_files(const struct replay *r);
const struct replay_file *replay_file_at(const struct replay *r, size_t i);
uint64_t replay_malformed(const struct replay *r);
/* Merge events explained so far (those at opts.explain_step). */
size_t replay_n_explained(const struct replay *r);
/* Files that could not be read at all, and files cut short. */
size_t replay_n_unreadable(const struct replay *r);
size_t replay_n_truncated(const struct replay *r);
/* Files read that held no audit event that could be read (only malformed
 * lines, a log without audit lines ...): a usage error. */
size_t replay_n_no_audit(const struct replay *r);
/* Audit events read in all files (0: there is nothing to report on). */
uint64_t replay_events(const struct replay *r);
const struct replay_gate *replay_gate(const struct replay *r);
/* Rows of the processes of files that hold more than one. */
size_t replay_n_proc_rows(const struct replay *r);
const struct replay_proc_row *replay_proc_row_at(const struct replay *r, size_t i);
/* Why rule i of a file (or the total, f NULL) has nothing to judge, in words. */
const char *replay_not_evaluable_why(const struct replay *r, const struct replay_file *f, size_t i);

/*
 * One source replayed as its lines arrive (ttaudit watch): the same decoding
 * and per-process replay as replay_add_file, fed one complete line at a time
 * (without its newline). r gives the rules and options and must outlive the
 * stream; nothing is merged into r. Not thread-safe: the caller serialises
 * feeding and reading. NULL on allocation failure.
 */
struct replay_stream;
struct replay_stream *replay_stream_new(const struct replay *r, const char *name);
void replay_stream_free(struct replay_stream *s);
/*
 * STATUS_OK for a line read (an item, or a line that holds none); STATUS_PARSE
 * or STATUS_LIMIT for a malformed one (counted in the stats; si says why);
 * STATUS_NOMEM.
 */
enum status replay_stream_line(struct replay_stream *s, const char *line, size_t n,
			       struct status_info *si);
const struct audit_reader_stats *replay_stream_stats(const struct replay_stream *s);
/* The processes so far; row->counts points at the live counts ([n_rules], valid until the next line). */
size_t replay_stream_n_procs(const struct replay_stream *s);
void replay_stream_proc(const struct replay_stream *s, size_t i, struct replay_proc_row *row);
/* Events of processes beyond REPLAY_MAX_PROCS (not counted per process). */
uint64_t replay_stream_procs_dropped(const struct replay_stream *s);

/*
 * Reports added up (ttaudit combine): `ttaudit replay --json` results of
 * separate runs. replay_new_from_report makes a replay with the rules of the
 * report at path (no file read yet); replay_add_report adds a report into r:
 * counts add, garbage values merge, fingerprints intersect (evaluated and
 * mismatched add, so a rule stays consistent only where every part says so),
 * per-process rows and the files they name are kept, in order. Reports of
 * different rule lists are STATUS_USAGE; one that is not a report STATUS_PARSE.
 * The parts must be disjoint: a file replayed in two parts is counted twice.
 */
enum status replay_new_from_report(struct replay **out, const char *path, struct status_info *si);
enum status replay_add_report(struct replay *r, const char *path, struct status_info *si);

/* The report. */
void replay_print_text(const struct replay *r, FILE *f);
void replay_print_json(const struct replay *r, FILE *f);
void replay_print_explain_text(const struct replay *r, FILE *f);
/* Writes the "explain" array (key included) into an open JSON object. */
struct jsonw;
void replay_print_explain_json(const struct replay *r, struct jsonw *w);

#endif
