/*
 * log.h - vLLM-style log lines on a file descriptor:
 * "INFO 11-29 20:41:02 [generator.py:1930] text". Each line is one write(2),
 * so lines from several threads never interleave.
 */
#ifndef TTSIM_LOG_H
#define TTSIM_LOG_H

#include <stddef.h>

/* The prefix for `where` ("generator.py:1930") at the current time, into
 * buf; returns its length. */
size_t ttsim_log_prefix(const char *level, const char *where, char *buf, size_t n);

/* One prefixed line on fd; text longer than 8 KiB is cut. */
void ttsim_log(int fd, const char *level, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* write(2) all of buf, retrying on EINTR and short writes; 0 or -1. */
int ttsim_log_write_all(int fd, const char *buf, size_t n);

#endif
