/*
 * vocab.h - ttsim's tokenizer: a fixed word list, so generated text is
 * readable and every generated token detokenizes to a distinct string.
 *
 * Token ids [0, TTSIM_VOCAB_WORDS) are generated words: a base word in one of
 * eight forms (lower or capitalised, bare or followed by ',', '.', ';'),
 * written with a leading space. Ids [TTSIM_VOCAB_WORDS, TTSIM_VOCAB_UNK)
 * stand for prompt pieces that are not generated words: a piece gets the
 * first free id from its hash on (open addressing, so two different pieces
 * never share one), and that id detokenizes back to the piece, as a real
 * tokenizer's vocabulary does; an id no piece has taken detokenizes as
 * " tok<id>". Ids therefore depend on the order pieces were first seen in
 * the process, never on anything else. When the probes find no free id (the
 * table is nearly full) the piece is TTSIM_VOCAB_UNK, " <unk>": never
 * another piece's id, whose text a copy would then show. Tokenizing splits
 * on white space. Thread-safe: ids are claimed with a compare-and-swap.
 */
#ifndef TTSIM_VOCAB_H
#define TTSIM_VOCAB_H

#include <stddef.h>

#define TTSIM_VOCAB_WORDS 2048
#define TTSIM_VOCAB_SIZE 32768
#define TTSIM_VOCAB_UNK (TTSIM_VOCAB_SIZE - 1)

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

/*
 * A code piece, the kind a copy task names (model.h): at least 4 bytes, only
 * upper-case ASCII letters and digits, at least one of each. tok's text is
 * checked (a prompt-only id); a generated word is never one.
 */
int ttsim_vocab_is_code(int tok);
/* The id "Code:" has (claimed on first use), the piece that starts a copy task. */
int ttsim_vocab_code_tag(void);

#endif
