/*
 * lineread.c - capped lines of a FILE (lineread.h): one getc loop that stops
 * keeping bytes at the cap, so no line, however long, is held whole.
 */
#include "base/lineread.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

void lineread_init(struct lineread *lr, FILE *f, size_t max)
{
	memset(lr, 0, sizeof(*lr));
	lr->f = f;
	lr->max = max;
}

void lineread_release(struct lineread *lr)
{
	free(lr->buf);
	memset(lr, 0, sizeof(*lr));
}

ssize_t lineread_next(struct lineread *lr)
{
	size_t n = 0;
	int ch;
	/* the line, its '\n' and the NUL: the buffer's cap */
	size_t room = lr->max <= SIZE_MAX - 2 ? lr->max + 2 : SIZE_MAX;

	while ((ch = getc_unlocked(lr->f)) != EOF) {
		if (ch != '\n' && n == lr->max) {
			while ((ch = getc_unlocked(lr->f)) != EOF && ch != '\n')
				;
			lr->line++;
			return LINEREAD_LONG;
		}
		/* n <= max here: the line, its '\n' and the NUL fit in room */
		if (n + 2 > lr->cap && ALLOC_GROW_MAX(lr->buf, n + 2, lr->cap, room) < 0)
			return LINEREAD_NOMEM;
		lr->buf[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	if (!n)
		return LINEREAD_EOF;
	lr->buf[n] = '\0';
	lr->line++;
	return (ssize_t)n;
}
