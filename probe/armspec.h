/*
 * armspec.h - arm specs (docs/arms.md): the JSON file that says, per arm,
 * what the launcher sets (`env`) and what the server's own output must show
 * (`requires`) and must not show (`forbids`). This module owns the format:
 * loading and validation, with file:line messages. arms.h evaluates a spec.
 */
#ifndef TTAUDIT_ARMSPEC_H
#define TTAUDIT_ARMSPEC_H

#include <stddef.h>
#include <stdio.h>

#include "base/status.h"

#define ARM_SPEC_MAX_BYTES (1u << 20)
#define ARM_MAX_ITEMS 64          /* requires + forbids of one arm */

enum arm_kind { ARM_LOG, ARM_METRICS, ARM_MODELS, ARM_ENV, ARM_AUDIT };

struct arm_spec;

/*
 * Loads and validates a spec. Errors (STATUS_IO, STATUS_PARSE) name the
 * file, line and what is wrong (`arms.json:12: arm 'batch': requires[1]:
 * bad pattern: missing closing parenthesis`). Free with arm_spec_free().
 */
enum status arm_spec_load(const char *path, struct arm_spec **out, struct status_info *si);
void arm_spec_free(struct arm_spec *s);

size_t arm_spec_n_arms(const struct arm_spec *s);
const char *arm_spec_arm(const struct arm_spec *s, size_t i);
/* 1 when the spec declares arm `name`. */
int arm_spec_has(const struct arm_spec *s, const char *name);
/* Writes the arm's launch environment as NAME=VALUE lines to f. */
enum status arm_spec_print_env(const struct arm_spec *s, const char *arm, FILE *f,
			       struct status_info *si);

/* "log", "metrics", "models", "env", "audit". */
const char *arm_kind_name(enum arm_kind k);

#endif
