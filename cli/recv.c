/*
 * recv.c - the ttaudit executable's recv(): the load driver's receive
 * stamps (bench/rxstamp.h). Defined here, in the executable only, so that
 * linking the bench library never replaces recv in someone else's program.
 */
/* A fortified <sys/socket.h> would make recv an inline wrapper this file
 * could not define. */
#undef _FORTIFY_SOURCE

#include <sys/socket.h>

#include "bench/rxstamp.h"

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	return rxstamp_recv(fd, buf, n, flags);
}
