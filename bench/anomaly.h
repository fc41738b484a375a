/*
 * anomaly.h - token anomalies an output shows by itself, no reference
 * needed: token ids past the vocabulary where the server returns ids
 * (tenstorrent/tt-metal #52176: id 3214098612 from uninitialised trace
 * memory, vocabulary 201088), tokens that carry no text, a special token
 * repeated (tenstorrent/vllm #395: `<|end|><|end|>`), an empty answer
 * (#395: content null in 18 of 30 answers).
 */
#ifndef TTAUDIT_ANOMALY_H
#define TTAUDIT_ANOMALY_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/load.h"

struct anomaly {
	size_t ids_past_vocab;       /* ids >= the vocabulary (vocab known, ids returned) */
	long first_past_vocab;       /* output position of the first; -1 none */
	size_t empty_tokens;         /* token chunks (ids say so) with no text */
	size_t special_repeated;     /* a <|...|> token right after the same one */
	bool empty_content;          /* a successful answer with no text at all */
	bool ids_seen;               /* the output had token ids */
};

/* The anomalies of r (kept text and ids); vocab <= 0: not known (ids are
 * then not judged). */
void anomaly_of(const struct load_result *r, long vocab, struct anomaly *a);

/* Any at all. */
bool anomaly_any(const struct anomaly *a);

#endif
