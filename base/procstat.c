/*
 * procstat.c - reads fields of /proc/<pid>/stat by name (procstat.h).
 */
#include "base/procstat.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int procstat_parse(const char *buf, size_t n, enum procstat_field field, long long *value, char *state)
{
	const char *p = NULL, *end = buf + n;
	long long v = 0;
	int at, neg = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] == ')')
			p = buf + i;
	/* after the name: ") S ..." */
	if (!p || end - p < 3 || p[1] != ' ')
		return -1;
	if (state)
		*state = p[2];
	if (!value)
		return 0;
	for (at = 2, p++; p < end && at < (int)field; p++)
		if (*p == ' ')
			at++;
	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	if (p >= end || *p < '0' || *p > '9')
		return -1;
	while (p < end && *p >= '0' && *p <= '9' && v < (1LL << 58))
		v = v * 10 + (*p++ - '0');
	*value = neg ? -v : v;
	return 0;
}

long long procstat_read(pid_t pid, enum procstat_field field, char *state)
{
	char path[64], buf[2048];
	long long v = -1;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || procstat_parse(buf, (size_t)n, field, &v, state))
		return -1;
	return v;
}
