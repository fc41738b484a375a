/*
 * procstat.h - fields of /proc/<pid>/stat, by their proc(5) names.
 *
 * The capture reader asks whether a process is still the one that made a
 * ring (its start time), whether it is a zombie and how it exited; `lock`
 * walks parent ids; the shim reads its own start time. The command name
 * (field 2) may hold spaces and parentheses: fields are counted from the
 * last ')'.
 */
#ifndef TTAUDIT_PROCSTAT_H
#define TTAUDIT_PROCSTAT_H

#include <stddef.h>
#include <sys/types.h>

/* Field numbers as proc(5) gives them (1-based). */
enum procstat_field {
	PROCSTAT_STATE = 3,        /* R, S, D, Z (zombie), X (dead), ... */
	PROCSTAT_PPID = 4,
	PROCSTAT_STARTTIME = 22,   /* clock ticks after boot: with the pid, names one process */
	PROCSTAT_EXIT_CODE = 52,   /* the wait status, once a zombie (Linux 3.5) */
};

/*
 * Field `field` of a stat line buf[0..n) as a number into *value, and the
 * state letter into *state (either may be NULL); 0 on success, -1 when the
 * line is malformed or has no such number. Touches nothing but its
 * arguments: async-signal-safe, the shim uses it.
 */
int procstat_parse(const char *buf, size_t n, enum procstat_field field, long long *value, char *state);
/* The same read from /proc/PID/stat: the number, or -1 when unreadable. */
long long procstat_read(pid_t pid, enum procstat_field field, char *state);

#endif
