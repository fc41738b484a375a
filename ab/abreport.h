/*
 * abreport.h - the reports of a finished A/B, for ab.c: ab-report.md and
 * ab-report.json, the timelines, the figures and ab-report.html in the
 * output directory, from the state after the verdict.
 */
#ifndef TTAUDIT_ABREPORT_H
#define TTAUDIT_ABREPORT_H

#include "ab/abctx.h"
#include "base/status.h"

/* Writes every output of the A/B; the first failure names its file. */
enum status abreport_write(struct ab_ctx *c, struct status_info *si);

#endif
