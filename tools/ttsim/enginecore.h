/*
 * enginecore.h - the engine core process of `ttsim serve` and the pipe
 * protocol the server speaks to it.
 *
 * vLLM runs its engine in a child process whose lines carry its own prefix
 * "(EngineCore_DP0 pid=N) ". ttsim does the same: the server execs
 * `ttsim engine-core NAME` with the read end of a pipe on fd 3 and the write
 * end of an answer pipe on fd 4, and sends it records; the engine core
 * writes each as its own line, with its prefix. So the engine's start-up
 * lines, the merge audit and the guard lines are written by the engine
 * process, whose start record a capture has, as on the real stack.
 *
 * A record is one line: its kind's letter, then its fields, each after a
 * '|'. The text is the last field and may hold '|'; no field holds a newline.
 */
#ifndef TTSIM_ENGINECORE_H
#define TTSIM_ENGINECORE_H

#include <stddef.h>

#include "tools/ttsim/audit.h"

enum ttsim_enginecore_kind {
	/* "L|LEVEL|where|text": a vLLM logger line on the engine's stdout */
	TTSIM_ENGINECORE_VLLM = 'L',
	/* "G|LEVEL|where|text": a loguru line on its stderr (tt-metal's model
	 * code: the generator's audit and the kit's guard lines) */
	TTSIM_ENGINECORE_LOGURU = 'G',
	/* "S|text": a tt-metal C++ (spdlog) line on its stdout, as is */
	TTSIM_ENGINECORE_SPDLOG = 'S',
	/* "Y|": answer one byte on fd 4: every record before it is written */
	TTSIM_ENGINECORE_SYNC = 'Y',
};

struct ttsim_enginecore_rec {
	enum ttsim_enginecore_kind kind;
	const char *level, *where;   /* VLLM and LOGURU; NULL otherwise */
	const char *text;            /* all but SYNC; NULL there */
};

/* The longest record the engine core reads; a longer one is cut there. */
#define TTSIM_ENGINECORE_LINE_MAX (1u << 20)

/*
 * The writer: r as one record line, newline included, into buf (always
 * terminated when n > 0). A field is cut at a newline in it (a record is one
 * line), the text also where buf ends. Returns the length written.
 */
size_t ttsim_enginecore_encode(const struct ttsim_enginecore_rec *r, char *buf, size_t n);

/*
 * The reader: one record line (its newline removed, NUL-terminated), split
 * in place; r's fields point into it. 0, or -1 when the line is no record
 * (an unknown kind, a field missing): the engine core skips it.
 */
int ttsim_enginecore_decode(char *line, struct ttsim_enginecore_rec *r);

struct ttsim_enginecore;

/*
 * Starts `ttsim engine-core name` (this executable, /proc/self/exe). NULL
 * when no process could be had (said on stderr): a NULL engine core is this
 * process, and what is sent to it is printed here, as the engine would.
 */
struct ttsim_enginecore *ttsim_enginecore_start(const char *name);

/* One record to ec (text from fmt; at most 7000 bytes of it). */
void ttsim_enginecore_send(struct ttsim_enginecore *ec, enum ttsim_enginecore_kind kind,
			   const char *level, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/*
 * Waits, 10 s at most, until the engine core has written every record sent
 * so far: vLLM's API server serves only once its engine core is up, so the
 * engine's start-up lines come before "listening" and the port file.
 */
void ttsim_enginecore_sync(struct ttsim_enginecore *ec);

/*
 * An audit whose lines are the engine core's loguru lines ("... | INFO |
 * generator:1930 - MERGE_AUDIT {...}"), written through ec's pipe. NULL
 * when ec is NULL or out of memory. The caller frees it (ttsim_audit_free)
 * and writes nothing to it after ttsim_enginecore_stop.
 */
struct ttsim_audit *ttsim_enginecore_audit(struct ttsim_enginecore *ec);

/* Closes the pipe (the engine core writes what it has, then ends), waits
 * for the process and frees ec. NULL is fine. */
void ttsim_enginecore_stop(struct ttsim_enginecore *ec);

/*
 * `ttsim engine-core NAME`, the child: writes the records fd 3 brings until
 * it closes, answering SYNC on fd 4; its lines carry the process prefix
 * NAME ("EngineCore" or "EngineCore_DP0"; another name is EngineCore_DP0).
 * Returns the exit code.
 */
int ttsim_enginecore_main(const char *name);

#endif
