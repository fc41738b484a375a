/*
 * benchreport.h - a bench run's report (driver.h: struct driver_report)
 * as JSON or text, for `ttaudit bench`.
 */
#ifndef TTAUDIT_BENCHREPORT_H
#define TTAUDIT_BENCHREPORT_H

#include <stdio.h>

#include "bench/driver.h"

/* The report as one JSON object (malloc'd, caller frees); NULL on allocation failure. */
char *benchreport_json(const struct driver_report *rep);
/* The report as text. Failures are said first. */
void benchreport_print(const struct driver_report *rep, FILE *f);

#endif
