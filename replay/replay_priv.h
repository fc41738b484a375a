/*
 * replay_priv.h - what the files of the replay module share (replay.c reads
 * and merges, replay_report.c says what was found, replay_combine.c adds
 * reports up); callers use replay.h only.
 */
#ifndef TTAUDIT_REPLAY_PRIV_H
#define TTAUDIT_REPLAY_PRIV_H

#include "replay/replay.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/reader.h"

/* Distinct garbage values the text report lists. */
#define REPLAY_GARBAGE_SHOWN 8
/* Rates are said at the confidence every report uses (base/rate.h). */
#define REPLAY_CONFIDENCE 0.95
#define REPLAY_CONFIDENCE_TEXT "95%"
/* Per-process rows kept over all files; beyond, rows are counted (the totals stay whole). */
#define REPLAY_ROWS_MAX 65536
/* Files a job reads ahead of the merge at most, per reader. */
#define REPLAY_AHEAD 4

struct replay_explained {
	char *text;     /* human text, owned */
	char *json;     /* one JSON object, owned */
};

/* The state of one process while its file is read. */
struct replay_proc {
	bool has_pid, has_rank, has_dp;
	int64_t pid, rank, dp;
	struct tally *tally;
	struct replay_gate gate;
	/* --explain: the last garbage value per slot, to spot drift */
	int64_t *res_value, *res_step;
	uint8_t *res_seen;
	uint32_t res_cap;
};

/* A config event: it applies to later merges of its pid (and rank, when it names one). */
struct replay_cfg {
	bool has_pid, has_rank;
	int64_t pid, rank, max_model_len;
};

/* Everything one file produced before it is merged. */
struct replay_job {
	const char *path;
	bool skip;                  /* an inode duplicate (of file dup_of): never read */
	size_t dup_of;
	enum status st;             /* the file-level outcome */
	struct status_info si;
	bool unreadable, truncated, strict_stop, done;
	struct audit_reader_stats stats;
	uint64_t malformed;
	uint64_t hash;
	struct replay_proc *procs;
	size_t n_procs, cap_procs, last_proc;
	uint64_t procs_dropped;     /* events of processes beyond REPLAY_MAX_PROCS */
	struct replay_cfg *cfgs;
	size_t n_cfgs, cap_cfgs;
	char (*diag)[640];          /* the first REPLAY_MALFORMED_SHOWN malformed-line messages */
	size_t n_diag;
	struct replay_explained explained[REPLAY_EXPLAIN_MAX];
	size_t n_explained;
	uint64_t explain_dropped;
	struct replay_site *sites;
	size_t n_sites, cap_sites;
	uint64_t sites_dropped;
	struct replay_end ends[REPLAY_ENDS_SHOWN];
	size_t n_ends;
	uint64_t ends_dropped;
	uint64_t prog_bytes, prog_merges;   /* read since the last report to r->prog */
	const struct replay *r;
};

/* Files seen, by identity and by content, for counting each once. */
struct replay_seen {
	uint64_t key, a, b;        /* a, b: dev and inode, or hash and length */
	size_t file;
};

/*
 * Blocks the per-file counts are carved from: one allocation for many files,
 * so 10,000 files cost their counts and not 10,000 allocations' overhead.
 */
#define REPLAY_SLAB_FILES 256
struct replay_slab {
	struct replay_slab *next;
	size_t used;                       /* counts handed out, of REPLAY_SLAB_FILES * n_rules */
	struct tally_counts c[];
};

/* What every job has read, for the progress line; drawn by one thread at a time. */
struct replay_prog {
	_Atomic uint64_t bytes, merges;
	atomic_flag drawing;
};

struct replay {
	struct replay_opts opts;
	struct rule rules[RULE_MAX_LIST];
	struct tally *total;
	struct replay_file *files;
	size_t n_files, cap_files;
	uint64_t malformed, shown;
	struct audit_reader_stats stats;   /* summed over files */
	struct replay_gate gate;
	struct replay_explained explained[REPLAY_EXPLAIN_MAX];
	size_t n_explained;
	uint64_t explain_dropped;
	size_t n_unreadable, n_truncated, n_dups, n_bom, n_no_audit;
	size_t n_sites_total;
	uint64_t procs_dropped;
	struct replay_proc_row *rows;
	size_t n_rows, cap_rows;
	uint64_t rows_dropped;
	struct replay_end ends[REPLAY_ENDS_SHOWN];
	size_t n_ends;
	uint64_t ends_dropped;
	struct replay_prog *prog;          /* for opts.progress: counts every job adds to */
	struct replay_slab *slab;          /* per-file counts (keep_sites), many files to a block */
	struct replay_seen *seen_id, *seen_content;   /* open addressing, cap_seen slots each */
	size_t n_seen_id, n_seen_content, cap_seen_id, cap_seen_content;
	struct audit_reader *reader;       /* the serial path's reader, reused file to file */
	bool single_input;                 /* replay_add_files with one file: no content to compare */
};

/* Shared helpers (replay.c). */
const char *replay_proc_label(bool has_pid, int64_t pid, bool has_rank, int64_t rank, bool has_dp,
			      int64_t dp, char *buf, size_t n);
void replay_gate_add(struct replay_gate *d, const struct replay_gate *s);
void replay_stats_add(struct audit_reader_stats *d, const struct audit_reader_stats *s);
struct replay_file *replay_new_row(struct replay *r, const char *path);

#endif
