/*
 * answer.h - non-streamed completions and chats.
 */
#ifndef TTSIM_ANSWER_H
#define TTSIM_ANSWER_H

#include <microhttpd.h>

struct ttsim_server;
struct ttsim_engine_conn;

/* The non-streamed answer once sc's request has finished: called when the
 * request is submitted and each time its suspended connection is resumed.
 * MHD_YES after suspending to wait, MHD_NO to close the connection
 * unanswered (client gone, abort, reset fault). Takes srv->mu. */
enum MHD_Result ttsim_answer_step(struct ttsim_server *srv, struct MHD_Connection *conn,
			    struct ttsim_engine_conn *sc);

#endif
