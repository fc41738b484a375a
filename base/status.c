#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[STATUS__COUNT] = {
	[STATUS_OK] = "ok",
	[STATUS_NOMEM] = "out of memory",
	[STATUS_IO] = "input/output error",
	[STATUS_PARSE] = "malformed input",
	[STATUS_LIMIT] = "limit exceeded",
	[STATUS_USAGE] = "bad usage",
	[STATUS_NOTFOUND] = "not found",
	[STATUS_EOF] = "end of input",
	[STATUS_UNSUPPORTED] = "unsupported",
	[STATUS_HTTP] = "http error",
	[STATUS_TIMEOUT] = "timed out",
	[STATUS_BUSY] = "resource busy",
	[STATUS_CHILD] = "child process failed",
};

const char *status_strerror(enum status st)
{
	if ((unsigned)st >= STATUS__COUNT || !status_names[st])
		return "unknown status";
	return status_names[st];
}

void status_info_clear(struct status_info *si)
{
	if (si)
		memset(si, 0, sizeof(*si));
}

enum status status_set(struct status_info *si, enum status st, const char *fmt, ...)
{
	va_list ap;

	if (!si)
		return st;
	va_start(ap, fmt);
	vsnprintf(si->msg, sizeof(si->msg), fmt, ap);
	va_end(ap);
	return st;
}

enum status status_set_at(struct status_info *si, enum status st, const char *file,
			  long line, long byte, const char *fmt, ...)
{
	va_list ap;

	if (!si)
		return st;
	if (file)
		snprintf(si->file, sizeof(si->file), "%s", file);
	si->line = line;
	si->byte = byte;
	va_start(ap, fmt);
	vsnprintf(si->msg, sizeof(si->msg), fmt, ap);
	va_end(ap);
	return st;
}

const char *status_info_format(const struct status_info *si, char *buf, size_t n)
{
	if (!n)
		return buf;
	if (si->file[0] && si->line > 0)
		snprintf(buf, n, "%s:%ld: %s", si->file, si->line, si->msg);
	else if (si->file[0])
		snprintf(buf, n, "%s: %s", si->file, si->msg);
	else
		snprintf(buf, n, "%s", si->msg);
	return buf;
}
