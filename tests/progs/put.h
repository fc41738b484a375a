/*
 * put.h - for the C hosts of the capture tests (the .c files here): a string
 * written whole with raw write(2), the way the tests need their bytes to
 * reach the fd (retried after EINTR and short writes; exit 9 on failure).
 */
#ifndef TTAUDIT_PROGS_PUT_H
#define TTAUDIT_PROGS_PUT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_n(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t r = write(fd, s, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			exit(9);
		s += r;
		n -= (size_t)r;
	}
}

static void put(int fd, const char *s)
{
	put_n(fd, s, strlen(s));
}

#endif
