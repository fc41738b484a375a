/*
 * log.c - vLLM-style log lines (see log.h).
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

size_t ttsim_log_prefix(const char *level, const char *where, char *buf, size_t n)
{
	time_t now = time(NULL);
	struct tm tm;
	char ts[32];
	int w;

	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%m-%d %H:%M:%S", &tm);
	w = snprintf(buf, n, "%s %s [%s] ", level, ts, where);
	if (w < 0)
		return 0;
	return (size_t)w < n ? (size_t)w : n - 1;
}

int ttsim_log_write_all(int fd, const char *buf, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, buf, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

void ttsim_log(int fd, const char *level, const char *where, const char *fmt, ...)
{
	char line[8192];
	size_t len;
	va_list ap;
	int w;

	len = ttsim_log_prefix(level, where, line, sizeof(line));
	va_start(ap, fmt);
	w = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	len += (size_t)w < sizeof(line) - len - 1 ? (size_t)w : sizeof(line) - len - 2;
	line[len++] = '\n';
	(void)ttsim_log_write_all(fd, line, len);
}
