/*
 * armspec_priv.h - the parsed form of an arm spec, shared by the module that
 * reads specs (armspec.c) and the one that evaluates them (arms.c). Nothing
 * outside probe/ includes it: other parts use armspec.h and arms.h.
 */
#ifndef TTAUDIT_ARMSPEC_PRIV_H
#define TTAUDIT_ARMSPEC_PRIV_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stdint.h>

#include "probe/arms.h"
#include "probe/armspec.h"
#include "base/jdoc.h"
#include "analyzer/rule.h"

#define ARM_MAX_LABELS 16
#define ARM_MAX_ARMS 64

struct arm_item {
	enum arm_kind kind;
	bool forbid;
	long line;                    /* in the spec */
	const char *what;             /* pattern, metric, field, variable or rule (in the jdoc) */
	uint32_t what_len;
	pcre2_code *re;               /* log */
	const char *labels[2 * ARM_MAX_LABELS];   /* metrics: name, value, ... */
	size_t n_labels;
	const struct jval *equals;    /* models, env: NULL = presence only */
	const char *model;            /* models: the entry to look at; NULL = any */
	struct rule rule;             /* audit */
	const char *banner_rule;      /* log: the capture banner rule that records its lines */
	char label[256];              /* for reports */
};

struct arm_def {
	const char *name;
	long line;
	const struct jval *env;       /* object of strings, or NULL */
	struct arm_item items[ARM_MAX_ITEMS];
	size_t n_items;
};

struct arm_spec {
	char path[512];
	char *text;
	size_t n_text;
	struct jdoc *doc;
	struct arm_def *arms;
	size_t n_arms;
};

/* A scalar as JSON text ("3", "\"auto\"", "true"), a container by its type name. */
void arm_value_text(const struct jval *v, char *buf, size_t n);

/* The arm named `name`, or NULL. */
const struct arm_def *arm_spec_find(const struct arm_spec *s, const char *name);

#endif
