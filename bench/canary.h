/*
 * canary.h - canary isolation: every request carries a marker of its own in
 * a task whose right answer repeats it, and every output is searched for its
 * own marker and for every other request's. A token that belongs to another
 * request (ollama #17475's VIN in five other customers' outputs; LMCache
 * #4385's planted passphrases) shows as that request's marker, with the
 * donor named; no solo reference is needed, and benign rephrasing is no
 * failure.
 *
 * Markers. CANARY_GROUPS groups of CANARY_GROUP_LEN characters from an
 * alphabet of upper-case consonants and the digits 2-9 (no vowels, so no
 * word; at least two letters and two digits in a group, so no number), e.g.
 * "K7QX2J TZ4WP9 R8NB3H". Every group is unique over the run: the markers
 * sent, the calibration requests' and the decoys'. A group found anywhere in
 * an output names its owner. A tokenizer splits a group as it likes: the
 * search is on the text (and, where the server returns token ids and has a
 * /tokenize, on the ids that only one marker's tokenization holds).
 *
 * Decoys: as many markers as were sent, generated the same way and never
 * sent. A decoy found in an output is a chance match: the model produced a
 * group by itself. Their count is the control that says whether a leak can
 * be told from chance on this model; with any decoy found, the stage is at
 * best INCONCLUSIVE.
 *
 * The task. Completions: "Code: <marker>\nCopy: <marker>\nCopy:" (a base
 * model continues the pattern); chat: "Code: <marker>\nRepeat the code four
 * times, separated by spaces, and write nothing else." Nothing in the body
 * asks for logprobs, penalties or structured output: on Tenstorrent those
 * force the synchronous path (vllm-tt-plugin docs/SCHEDULING.md), which would
 * turn off the path under test.
 *
 * Own marker. Only a model that repeats can lose its marker: a calibration
 * pass (CANARY_CALIBRATION requests alone, before the load) says whether it
 * does (every group of its marker in each answer) and how many tokens one
 * whole marker took. An output is checked for its own marker only when the
 * model repeats and the output is at least that long; otherwise its own
 * check is "not evaluable" (a random-weight model, an early finish, an
 * abort), never "lost" and never "ok".
 *
 * Verdicts per request, the first that applies: failed (the request failed;
 * an abort the client made is not a failure), leaked (a group of another
 * request's marker, sent or calibration: the first one's donor, its output
 * position in tokens, whether the donor had finished by then), lost (own
 * check evaluable and a group of its own marker missing), clean.
 */
#ifndef TTAUDIT_CANARY_H
#define TTAUDIT_CANARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/load.h"
#include "base/status.h"
#include "bench/suite.h"

#define CANARY_GROUPS 3
#define CANARY_GROUP_LEN 6
#define CANARY_MARKER_LEN (CANARY_GROUPS * (CANARY_GROUP_LEN + 1))
#define CANARY_CALIBRATION 3          /* calibration requests per server */
#define CANARY_MAX_MARKERS 1000000u   /* sent markers in a bench */
#define CANARY_MAX_IDS 32             /* token ids kept per marker */

enum canary_kind { CANARY_SENT = 0, CANARY_CALIB, CANARY_DECOY, CANARY__KINDS };

/* "sent", "calibration", "decoy". */
const char *canary_kind_name(enum canary_kind k);

struct canary_set;

/*
 * n_sent markers for the requests, n_calib for calibration, and as many
 * decoys as the two together, from seed. STATUS_LIMIT past
 * CANARY_MAX_MARKERS. Free with canary_set_free().
 */
enum status canary_set_new(uint64_t seed, size_t n_sent, size_t n_calib, struct canary_set **out,
			   struct status_info *si);
void canary_set_free(struct canary_set *s);
size_t canary_count(const struct canary_set *s, enum canary_kind k);
/* The marker's text, "G1 G2 G3" (CANARY_MARKER_LEN - 1 bytes); the set's. */
const char *canary_text(const struct canary_set *s, enum canary_kind k, size_t i);

/*
 * A suite (suite.h) of the task for the sent markers, entries 0..n_sent),
 * then the calibration markers: one entry per marker, max_tokens each, chat
 * or completions. Free with suite_free().
 */
enum status canary_suite(const struct canary_set *s, bool chat, long max_tokens, struct suite **out,
			 struct status_info *si);

/* What became of a sent marker's request, for its donors' questions: its
 * request id (copied) and when it ended (CLOCK_MONOTONIC; 0 never): its last
 * token, or its cancel. */
void canary_note(struct canary_set *s, enum canary_kind k, size_t i, const char *request_id,
		 double t_end, bool aborted);

/*
 * The token ids marker i has by the server's tokenizer (as it stands in an
 * answer, after a space), for the id search; at most CANARY_MAX_IDS kept.
 * An id is evidence only when one marker's ids hold it (canary_ids_done).
 */
void canary_set_ids(struct canary_set *s, enum canary_kind k, size_t i, const int64_t *ids, size_t n);
/* After every canary_set_ids: indexes the ids that belong to one marker only,
 * leaving out those of `common` (the task's own words). */
enum status canary_ids_done(struct canary_set *s, const int64_t *common, size_t n_common,
			    struct status_info *si);
bool canary_has_ids(const struct canary_set *s);

/* What the calibration pass showed. */
struct canary_calib {
	size_t n, n_repeated;        /* calibration answers, and those with their whole marker */
	bool repeats;                /* every one did: own markers can be checked */
	size_t tokens_for_marker;    /* the most tokens any took to write its whole marker once */
	bool ids_returned;           /* the server sent token ids with its chunks */
};

/* The calibration requests' results (run request i: calibration marker first + i). */
void canary_calibrate(const struct canary_set *s, const struct load_run *run, size_t first,
		      struct canary_calib *cal);

enum canary_verdict { CANARY_CLEAN, CANARY_LEAKED, CANARY_LOST, CANARY_FAILED };
enum canary_own { CANARY_OWN_OK, CANARY_OWN_LOST, CANARY_OWN_NOT_EVALUABLE };

/* "clean", "leaked", "lost", "failed"; "ok", "lost", "not-evaluable". */
const char *canary_verdict_name(enum canary_verdict v);
const char *canary_own_name(enum canary_own o);

struct canary_leak {
	enum canary_kind kind;       /* CANARY_SENT or CANARY_CALIB */
	size_t donor;                /* the donor's marker index in its kind */
	char donor_id[128];          /* its request id ("" when not noted) */
	size_t at;                   /* output position, in tokens, of the first foreign piece */
	size_t span;                 /* found in the text: the tokens of the chunk that holds it
				      * (the piece is one of at .. at + span - 1); 1 when exact */
	bool donor_finished;         /* the donor's stream had ended before that token came */
	bool donor_aborted;          /* ... by a client abort */
	bool by_id;                  /* found among the token ids, not in the text */
	char group[CANARY_GROUP_LEN + 1];   /* the group found (text); "" for an id */
};

struct canary_item {
	size_t request;              /* index in the run */
	size_t marker;               /* its sent marker */
	enum canary_verdict verdict;
	enum canary_own own;
	size_t own_groups;           /* of its own marker's groups, how many the output has */
	size_t n_leaks;              /* foreign pieces found (text and ids) */
	struct canary_leak leak;     /* the first (lowest position) */
	size_t n_decoy;              /* decoy pieces found: chance matches */
	bool aborted;                /* the client cancelled it (churn) */
};

struct canary_report {
	struct canary_item *items;   /* one per request of the run */
	size_t n;
	size_t n_clean, n_leaked, n_lost, n_failed;
	size_t n_own_checked;        /* own marker evaluable */
	size_t n_decoy_outputs;      /* outputs with any decoy piece */
	size_t n_id_checked;         /* outputs whose token ids were searched */
	size_t n_donor_finished;     /* leaks whose donor had finished */
};

/*
 * Checks the run whose request j carried sent marker first + j (their
 * canary_note already made, so a donor in this run is known). Release with
 * canary_report_release().
 */
enum status canary_check(const struct canary_set *s, const struct canary_calib *cal,
			 const struct load_run *run, size_t first, struct canary_report *rep,
			 struct status_info *si);
void canary_report_release(struct canary_report *rep);

/*
 * Every piece of a marker in text[0..len): calls fn with its kind, owner,
 * group and byte offset. For tests and the checker.
 */
void canary_scan(const struct canary_set *s, const char *text, size_t len,
		 void (*fn)(void *ctx, enum canary_kind k, size_t owner, size_t group, size_t off),
		 void *ctx);

#endif
