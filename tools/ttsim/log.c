/*
 * log.c - vLLM- and loguru-format log lines (see log.h).
 */
#include "tools/ttsim/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE 8192

/* Set once by ttsim_log_setup, before any thread starts; read-only after. */
static char log_proc[96];          /* "(APIServer pid=N) ", "" none */
static char log_proc_color[128];   /* the same in cyan */
static bool log_color[3];          /* per fd 0..2 */

static bool log_want_color(int fd)
{
	const char *c = getenv("VLLM_LOGGING_COLOR");

	if (getenv("NO_COLOR") || (c && !strcmp(c, "0")))
		return false;
	if (c && !strcmp(c, "1"))
		return true;
	return isatty(fd) == 1;
}

void ttsim_log_setup(const char *process_name)
{
	int fd;

	log_proc[0] = log_proc_color[0] = '\0';
	if (process_name) {
		snprintf(log_proc, sizeof(log_proc), "(%s pid=%d) ", process_name, (int)getpid());
		snprintf(log_proc_color, sizeof(log_proc_color), "\033[36m(%s pid=%d)\033[0m ", process_name,
			 (int)getpid());
	}
	for (fd = 1; fd <= 2; fd++)
		log_color[fd] = log_want_color(fd);
}

const char *ttsim_log_proc_prefix(int fd)
{
	return fd >= 0 && fd <= 2 && log_color[fd] ? log_proc_color : log_proc;
}

static const char *log_level_color(const char *level)
{
	if (!strcmp(level, "INFO"))
		return "\033[32m";
	if (!strcmp(level, "WARNING"))
		return "\033[33m";
	if (!strcmp(level, "ERROR"))
		return "\033[31m";
	if (!strcmp(level, "DEBUG"))
		return "\033[37m";
	return "\033[35m";
}

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

/* Appends s[0..n) to line at *len, cut at cap - 2 (room for the newline). */
static void log_put(char *line, size_t *len, size_t cap, const char *s, size_t n)
{
	if (*len + 2 >= cap)
		return;
	if (n > cap - 2 - *len)
		n = cap - 2 - *len;
	memcpy(line + *len, s, n);
	*len += n;
}

void ttsim_log(int fd, const char *level, const char *where, const char *fmt, ...)
{
	char line[LOG_LINE], msg[LOG_LINE], head[160], ts[32];
	const char *proc = ttsim_log_proc_prefix(fd), *p, *nl;
	bool color = fd >= 0 && fd <= 2 && log_color[fd];
	size_t len = 0, hn;
	time_t now = time(NULL);
	struct tm tm;
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%m-%d %H:%M:%S", &tm);
	if (color)
		w = snprintf(head, sizeof(head), "%s%s\033[0m \033[90m%s\033[0m \033[90m[%s]\033[0m ",
			     log_level_color(level), level, ts, where);
	else
		w = snprintf(head, sizeof(head), "%s %s [%s] ", level, ts, where);
	hn = w < 0 ? 0 : (size_t)w < sizeof(head) ? (size_t)w : sizeof(head) - 1;
	log_put(line, &len, sizeof(line), proc, strlen(proc));
	log_put(line, &len, sizeof(line), head, hn);
	/* a message of several lines: each goes on after "\r\n", the format's
	 * prefix and the process prefix, as vLLM's formatter and wrapper do */
	for (p = msg; (nl = strchr(p, '\n')); p = nl + 1) {
		log_put(line, &len, sizeof(line), p, (size_t)(nl - p));
		log_put(line, &len, sizeof(line), "\r\n", 2);
		log_put(line, &len, sizeof(line), proc, strlen(proc));
		log_put(line, &len, sizeof(line), head, hn);
	}
	log_put(line, &len, sizeof(line), p, strlen(p));
	line[len++] = '\n';
	(void)ttsim_log_write_all(fd, line, len);
}

void ttsim_loguru(int fd, const char *level, const char *where, const char *fmt, ...)
{
	char line[LOG_LINE];
	const char *proc = ttsim_log_proc_prefix(fd);
	struct timeval tv;
	struct tm tm;
	size_t len;
	char ts[32];
	va_list ap;
	int w;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	w = snprintf(line, sizeof(line), "%s%s.%03d | %s | %s - ", proc, ts, (int)(tv.tv_usec / 1000),
		     level, where);
	if (w < 0)
		return;
	len = (size_t)w < sizeof(line) ? (size_t)w : sizeof(line) - 1;
	va_start(ap, fmt);
	w = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	len += (size_t)w < sizeof(line) - len - 1 ? (size_t)w : sizeof(line) - len - 2;
	line[len++] = '\n';
	(void)ttsim_log_write_all(fd, line, len);
}
