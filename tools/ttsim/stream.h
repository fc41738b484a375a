/*
 * stream.h - streamed answers (text/event-stream) and what a waiting
 * connection needs: whether its client has gone, and an abortive close.
 */
#ifndef TTSIM_STREAM_H
#define TTSIM_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <microhttpd.h>

struct ttsim_server;
struct ttsim_engine_req;

/* True when conn's client has closed its end (a readable socket at EOF). */
bool ttsim_stream_peer_closed(struct MHD_Connection *conn);
/* Makes conn's close abortive: the peer sees a reset. */
void ttsim_stream_linger0(struct MHD_Connection *conn);
/* Appends rq's send stamps to the send log, once. Polling thread, mu not
 * held. */
void ttsim_stream_log_stamps(struct ttsim_server *srv, struct ttsim_engine_req *rq);
/* MHD's content reader for a streamed answer; cls is the engine_req. */
ssize_t ttsim_stream_read(void *cls, uint64_t pos, char *buf, size_t max);

#endif
