/*
 * vocab.h - ttsim's tokenizer: a fixed word list, so generated text is
 * readable and every generated token detokenizes to a distinct string.
 *
 * Token ids [0, TTSIM_VOCAB_WORDS) are generated words: a base word in one of
 * eight forms (lower or capitalised, bare or followed by ',', '.', ';'),
 * written with a leading space. Ids [TTSIM_VOCAB_WORDS, TTSIM_VOCAB_SIZE)
 * stand for prompt pieces that are not generated words (hashed); they
 * detokenize as " tok<id>". Tokenizing splits on white space.
 */
#ifndef TTSIM_VOCAB_H
#define TTSIM_VOCAB_H

#include <stddef.h>

#define TTSIM_VOCAB_WORDS 2048
#define TTSIM_VOCAB_SIZE 32768

/* Appends the text of `tok` (with its leading space) to buf at *len; returns
 * 0, or -1 when buf (size n) would overflow (nothing written then). */
int ttsim_vocab_append(int tok, char *buf, size_t n, size_t *len);

/* The text of a generated token (without the leading space) in buf; "" for
 * an id out of range. */
const char *ttsim_vocab_word(int tok, char *buf, size_t n);

/* Tokenizes `text` (len bytes, need not be NUL-terminated) into toks (cap
 * max). Returns the number of tokens the text has, which may exceed max:
 * only the first max are stored. */
size_t ttsim_vocab_tokenize(const char *text, size_t len, int *toks, size_t max);

#endif
