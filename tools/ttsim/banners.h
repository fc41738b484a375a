/*
 * banners.h - the lines `ttsim serve` prints around serving, as the real
 * processes print them: vLLM's API server (start-up, "Starting vLLM API
 * server", "Application startup complete", shutdown) in this process; the
 * engine's start-up (vLLM's engine, the TT plugin, tt-metal's C++ and Python
 * code, the instrumentation kit's gate and guard lines) through the engine
 * core; llama-server's, with --profile llamacpp. Texts and their sources:
 * docs/ttsim.md. Every function is a no-op for a profile that has no such
 * line.
 */
#ifndef TTSIM_BANNERS_H
#define TTSIM_BANNERS_H

#include <stdbool.h>

#include "tools/ttsim/enginecore.h"
#include "tools/ttsim/server.h"

/* Sets this process's log prefix (APIServer for vLLM, none for llama-server)
 * and prints the server's start-up lines, before the engine starts. */
void ttsim_banners_start(const struct ttsim_server_config *c);

/*
 * The engine's start-up lines, to ec (NULL: this process). arm is the arm
 * the banners claim; banner false leaves out the guard lines (--fault
 * no-banner); from_env says the arm came from QWEN36_* variables.
 */
void ttsim_banners_engine(struct ttsim_enginecore *ec, const struct ttsim_server_config *c,
			  unsigned arm, bool banner, bool from_env);

/* The server listens on port: its own line, then ttsim's "ttsim: listening
 * on 127.0.0.1:PORT" (stderr), which scripts wait for. */
void ttsim_banners_listening(const struct ttsim_server_config *c, int port);

/* Start-up is complete (after the port file is written). */
void ttsim_banners_ready(const struct ttsim_server_config *c);

/* A stop signal came. */
void ttsim_banners_shutdown(const struct ttsim_server_config *c);

#endif
