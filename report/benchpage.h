/*
 * benchpage.h - the page of a bench record file (html.h): the accuracy
 * curve, the canary's donor -> victim matrix, the churn's transitions on a
 * timeline. Private to report/: html.c calls it for a bench record file.
 */
#ifndef TTAUDIT_BENCHPAGE_H
#define TTAUDIT_BENCHPAGE_H

#include <stdbool.h>
#include <stdio.h>

#include "report/html.h"

/* Whether path's first record is a bench run record. */
bool benchpage_is_bench(const char *path);
/* Writes the page of bench record file path; STATUS_IO / STATUS_PARSE naming it. */
enum status benchpage_write(FILE *f, const char *path, struct html_stats *st, struct status_info *si);

#endif
