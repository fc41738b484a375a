/*
 * vocab.c - the word list and a white-space tokenizer (see vocab.h).
 */
#include "tools/ttsim/vocab.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vocab_base[256] = {
	"time", "year", "people", "way", "day", "man", "thing", "woman", "life", "child", "world",
	"school", "state", "family", "student", "group", "country", "problem", "hand", "part",
	"place", "case", "week", "company", "system", "program", "question", "work", "government",
	"number", "night", "point", "home", "water", "room", "mother", "area", "money", "story",
	"fact", "month", "lot", "right", "study", "book", "eye", "job", "word", "business",
	"issue", "side", "kind", "head", "house", "service", "friend", "father", "power", "hour",
	"game", "line", "end", "member", "law", "car", "city", "community", "name", "president",
	"team", "minute", "idea", "kid", "body", "information", "back", "parent", "face",
	"others", "level", "office", "door", "health", "person", "art", "war", "history", "party",
	"result", "change", "morning", "reason", "research", "girl", "guy", "moment", "air",
	"teacher", "force", "education", "foot", "boy", "age", "policy", "music", "market",
	"sense", "nation", "plan", "college", "interest", "death", "experience", "effect",
	"class", "control", "care", "field", "development", "role", "effort", "rate", "heart",
	"drug", "show", "leader", "light", "voice", "wife", "police", "mind", "price", "report",
	"decision", "son", "view", "relationship", "town", "road", "arm", "difference", "value",
	"building", "action", "model", "season", "society", "tax", "director", "position",
	"player", "record", "paper", "space", "ground", "form", "event", "official", "matter",
	"center", "couple", "site", "project", "activity", "star", "table", "need", "court",
	"oil", "situation", "cost", "industry", "figure", "street", "image", "phone", "data",
	"picture", "practice", "piece", "land", "product", "doctor", "wall", "patient", "worker",
	"news", "test", "movie", "north", "love", "support", "technology", "step", "baby",
	"computer", "type", "attention", "film", "tree", "source", "organization", "hair",
	"window", "evidence", "population", "river", "sea", "bird", "stone", "garden", "letter",
	"color", "island", "summer", "winter", "spring", "autumn", "bridge", "valley", "forest",
	"mountain", "lake", "desert", "ocean", "cloud", "rain", "snow", "wind", "storm", "sun",
	"moon", "planet", "signal", "engine", "wheel", "machine", "metal", "glass", "kernel",
	"buffer", "token", "batch", "slot", "device", "host", "merge", "guard", "stamp", "trace",
	"cache", "queue", "thread", "socket", "packet", "vector",
};

/* Forms: bit 2 capitalises, bits 0-1 pick the trailing mark. */
static const char *const vocab_marks[4] = { "", ",", ".", ";" };

#define VOCAB_BASES 256
#define VOCAB_WORD_MAX 48
#define VOCAB_PIECES (TTSIM_VOCAB_UNK - TTSIM_VOCAB_WORDS)
#define VOCAB_PROBES 64

/* The text of each prompt-only id, claimed once and never changed: a reader
 * that sees an entry sees its whole text (the release of the CAS). Process
 * lifetime; never freed. */
static _Atomic(char *) vocab_piece_text[VOCAB_PIECES];

const char *ttsim_vocab_word(int tok, char *buf, size_t n)
{
	const char *base;
	int form;

	if (!n)
		return buf;
	buf[0] = 0;
	if (tok < 0 || tok >= TTSIM_VOCAB_SIZE)
		return buf;
	if (tok == TTSIM_VOCAB_UNK) {
		snprintf(buf, n, "<unk>");
		return buf;
	}
	if (tok >= TTSIM_VOCAB_WORDS) {
		const char *t = atomic_load_explicit(&vocab_piece_text[tok - TTSIM_VOCAB_WORDS],
						     memory_order_acquire);

		if (t)
			snprintf(buf, n, "%s", t);
		else
			snprintf(buf, n, "tok%d", tok);
		return buf;
	}
	base = vocab_base[tok % VOCAB_BASES];
	form = tok / VOCAB_BASES;
	snprintf(buf, n, "%s%s", base, vocab_marks[form & 3]);
	if (form & 4)
		buf[0] = (char)toupper((unsigned char)buf[0]);
	return buf;
}

int ttsim_vocab_append(int tok, char *buf, size_t n, size_t *len)
{
	char w[VOCAB_WORD_MAX];
	size_t wl;

	ttsim_vocab_word(tok, w, sizeof(w));
	wl = strlen(w);
	if (*len + 1 + wl + 1 > n)
		return -1;
	buf[(*len)++] = ' ';
	memcpy(buf + *len, w, wl);
	*len += wl;
	buf[*len] = 0;
	return 0;
}

/* Is entry t the piece p[0..len)? */
static int vocab_same(const char *t, const char *p, size_t len)
{
	return !strncmp(t, p, len) && t[len] == 0;
}

/* The id of a prompt-only piece: the first entry from `slot` on that holds it
 * or that it can claim. */
static int vocab_claim(const char *p, size_t len, uint32_t slot)
{
	char *mine = NULL, *t;
	int k;

	if (len >= VOCAB_WORD_MAX)
		len = VOCAB_WORD_MAX - 1;   /* the text kept; longer pieces share their start */
	for (k = 0; k < VOCAB_PROBES; k++, slot = (slot + 1) % VOCAB_PIECES) {
		t = atomic_load_explicit(&vocab_piece_text[slot], memory_order_acquire);
		if (!t) {
			if (!mine) {
				mine = malloc(len + 1);
				if (!mine)
					return TTSIM_VOCAB_UNK;
				memcpy(mine, p, len);
				mine[len] = 0;
			}
			t = NULL;
			if (atomic_compare_exchange_strong_explicit(&vocab_piece_text[slot], &t, mine,
								    memory_order_acq_rel,
								    memory_order_acquire))
				return TTSIM_VOCAB_WORDS + (int)slot;
			/* another thread claimed it: t is its text */
		}
		if (vocab_same(t, p, len)) {
			free(mine);
			return TTSIM_VOCAB_WORDS + (int)slot;
		}
	}
	free(mine);
	return TTSIM_VOCAB_UNK;
}

int ttsim_vocab_is_code(int tok)
{
	const char *t, *c;
	int letters = 0, digits = 0;

	if (tok < TTSIM_VOCAB_WORDS || tok >= TTSIM_VOCAB_UNK)
		return 0;
	t = atomic_load_explicit(&vocab_piece_text[tok - TTSIM_VOCAB_WORDS], memory_order_acquire);
	if (!t || strlen(t) < 4)
		return 0;
	for (c = t; *c; c++) {
		if (*c >= 'A' && *c <= 'Z')
			letters++;
		else if (*c >= '0' && *c <= '9')
			digits++;
		else
			return 0;
	}
	return letters && digits;
}

int ttsim_vocab_code_tag(void)
{
	int tok;

	ttsim_vocab_tokenize("Code:", 5, &tok, 1);
	return tok;
}

/* The id of one white-space-free piece: a generated word if it is one,
 * else a hashed prompt-only id, so the same text always gets the same id. */
static int vocab_piece(const char *p, size_t len)
{
	char low[VOCAB_WORD_MAX];
	size_t i, bl = len;
	int form = 0, mark;
	uint32_t h = 2166136261u;

	if (len > 0 && len < sizeof(low)) {
		for (mark = 1; mark < 4; mark++)
			if (p[len - 1] == vocab_marks[mark][0]) {
				form = mark;
				bl = len - 1;
				break;
			}
		if (bl > 0 && isupper((unsigned char)p[0]))
			form |= 4;
		for (i = 0; i < bl; i++)
			low[i] = i == 0 ? (char)tolower((unsigned char)p[i]) : p[i];
		low[bl] = 0;
		for (i = 0; i < VOCAB_BASES; i++)
			if (!strcmp(low, vocab_base[i]))
				return form * VOCAB_BASES + (int)i;
	}
	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return vocab_claim(p, len, h % VOCAB_PIECES);
}

size_t ttsim_vocab_tokenize(const char *text, size_t len, int *toks, size_t max)
{
	size_t i = 0, n = 0, start;

	while (i < len) {
		while (i < len && isspace((unsigned char)text[i]))
			i++;
		if (i >= len)
			break;
		start = i;
		while (i < len && !isspace((unsigned char)text[i]))
			i++;
		if (n < max)
			toks[n] = vocab_piece(text + start, i - start);
		n++;
	}
	return n;
}
