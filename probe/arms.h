/*
 * arms.h - confirm the guard arm a server really runs from its own output.
 *
 * A declared arm is not a confirmed one: a flag can fail to reach a
 * container, a control can inherit a treatment's default from a reused
 * tree, a banner can be printed by code that never applies the guard. An
 * arm spec (JSON, docs/arms.md) says per arm what the launcher sets (`env`)
 * and what the server's output must show (`requires`) and must not show
 * (`forbids`: the other arm's banner, the only way to see a control that
 * silently became the treatment). Evidence items:
 *
 *   log      pcre2 pattern in the engine log or a capture's banner/line records
 *   metrics  a sample of GET /metrics with that name and those label values
 *   models   a field of a GET /v1/models entry, optionally equal to a value
 *   env      a variable the capture's start record shows the server had
 *   audit    the recorded merge decisions are consistent with exactly this
 *            rule (the analyzer's arm fingerprint), no other candidate left
 *
 * It fails closed: an empty or unreachable source is a FAIL, never a pass.
 */
#ifndef TTAUDIT_ARMS_H
#define TTAUDIT_ARMS_H

#include <stdbool.h>
#include <stdio.h>

#include "probe/armspec.h"
#include "base/status.h"

#define ARM_MAX_LINE (64u << 10)  /* log lines longer than this are matched on their start */

enum arm_verdict {
	ARM_MET,                /* required evidence found */
	ARM_ABSENT,             /* required evidence not found (or contradicted) */
	ARM_FORBIDDEN_PRESENT,  /* forbidden evidence found */
	ARM_CLEAR,              /* forbidden evidence not found in a source that was read */
	ARM_UNREACHABLE,        /* the source could not be read, or was empty */
	ARM_NOT_EVALUABLE,      /* the source read could not have recorded the evidence (a
				 * capture without --all-lines, for a line no banner rule names) */
};

/* Where the evidence comes from; NULL members are not available. */
struct arm_sources {
	const char *url;        /* server base URL: metrics and models */
	const char *log;        /* engine log, plain text lines (MERGE_AUDIT lines feed `audit`) */
	const char *capture;    /* capture JSONL: banner/line records, start env, audit records */
	const char *audit;      /* audit JSONL or capture for `audit` (default: capture, then log) */
	double timeout;         /* per HTTP request, seconds; <= 0: 10 */
};

struct arm_item_result {
	bool forbid;            /* from `forbids` */
	enum arm_kind kind;
	char what[256];         /* "log /pattern/", "metrics name{k=\"v\"}" ... */
	enum arm_verdict verdict;
	char where[2200];       /* "server.log:3", "http://h:p/metrics:12", "" */
	char quote[512];        /* the evidence line or value, as found */
	char reason[512];       /* why not met, or what was read */
};

struct arm_result {
	char arm[128];
	char spec[512];
	long spec_line;
	bool confirmed;
	size_t n_items;
	struct arm_item_result items[ARM_MAX_ITEMS];
};

/*
 * Evaluates arm `arm` of s against src into *r (heap-allocate it: it is
 * large). Returns STATUS_OK whatever the verdict (r->confirmed);
 * STATUS_NOTFOUND for an arm the spec does not declare, and http_init's
 * status when the arm has a metrics or models item, a url is given and
 * libcurl cannot be loaded.
 */
enum status arm_check(const struct arm_spec *s, const char *arm, const struct arm_sources *src,
		      struct arm_result *r, struct status_info *si);

/* "met", "absent", "forbidden-present", "clear", "source-unreachable", "not-evaluable". */
const char *arm_verdict_name(enum arm_verdict v);

void arm_result_print(const struct arm_result *r, FILE *f);
/* malloc'd JSON (caller frees); NULL on allocation failure. */
char *arm_result_json(const struct arm_result *r);

#endif
