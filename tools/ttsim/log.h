/*
 * log.h - log lines as vLLM and its engine print them.
 *
 * vLLM's logger (vllm/logger.py): "%(levelname)s %(asctime)s
 * [%(fileinfo)s:%(lineno)d] %(message)s", date "%m-%d %H:%M:%S", on stdout
 * (VLLM_LOGGING_STREAM ext://sys.stdout), coloured only when that stream is
 * a terminal (VLLM_LOGGING_COLOR=1 forces, 0 or NO_COLOR turns it off:
 * level in its colour, time and file grey). Every line of every process is
 * prefixed "(APIServer pid=N) " or "(EngineCore_DP0 pid=N) " (cyan on a
 * terminal; utils/system_utils.py decorate_logs), and a message of several
 * lines continues each with "\r\n" plus the format's prefix
 * (logging_utils/formatter.py NewLineFormatter), then the process prefix.
 * tt-metal's Python model code logs with loguru on stderr:
 * "2026-09-08 20:35:14.930 | INFO | model_config:591 - text".
 *
 * Each line is one write(2), so lines from several threads never interleave.
 */
#ifndef TTSIM_LOG_H
#define TTSIM_LOG_H

#include <stddef.h>

/*
 * The process prefix for this process ("APIServer", "EngineCore_DP0"; NULL:
 * none, the old plain form) and whether vLLM's lines go to stdout. Decides
 * colour per descriptor from the environment and isatty, once.
 */
void ttsim_log_setup(const char *process_name);

/* The prefix for `where` ("generator.py:1930") at the current time, into
 * buf; returns its length. No process prefix, no colour. */
size_t ttsim_log_prefix(const char *level, const char *where, char *buf, size_t n);

/* One vLLM logger line on fd (with the process prefix once set up); text
 * longer than 8 KiB is cut. */
void ttsim_log(int fd, const char *level, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* One loguru line ("date time.ms | LEVEL | where - text") on fd. */
void ttsim_loguru(int fd, const char *level, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The process prefix as set up, coloured for fd when fd is coloured; "" none. */
const char *ttsim_log_proc_prefix(int fd);

/* write(2) all of buf, retrying on EINTR and short writes; 0 or -1. */
int ttsim_log_write_all(int fd, const char *buf, size_t n);

#endif
