/*
 * pairreport.h - the report of a pair (pair.h): per run its verdict, the
 * rates with their intervals, the arm fingerprint, the failures matched with
 * substitutions (the first PAIRREPORT_SHOWN of each in text) and the
 * substitutions the server made; the JSON twin holds everything.
 */
#ifndef TTAUDIT_PAIRREPORT_H
#define TTAUDIT_PAIRREPORT_H

#include <stdio.h>

#include "pair/pair.h"

struct jsonw;

/* The report: a text table and failures, or JSON. */
void pairreport_text(const struct pair *p, FILE *f);
void pairreport_json(const struct pair *p, FILE *f);
/* One run as a JSON object (for the A/B report). */
void pairreport_run_json(const struct pair *p, const struct pair_run *r, struct jsonw *w);

#endif
