/*
 * sendstamp.h - when ttsim's sends returned, per socket.
 *
 * Why: a token's send time in ttsim's --send-log is the reference a
 * client's timestamps are measured against, so it must be when send(2)
 * returned with the token's bytes. libmicrohttpd does the sending; the
 * content reader learns the bytes went only at its next call, which can
 * come a polling round later (tens of microseconds on an idle server,
 * more when the thread is preempted). This module defines send() and
 * sendmsg() for the program (the executable's definitions are the ones
 * libmicrohttpd's calls bind to) and notes, per descriptor, when the
 * latest call that took bytes started and returned (CLOCK_MONOTONIC). On
 * loopback the bytes reach the receiving socket inside the call, which
 * takes microseconds when busy and tens of them when the host idles, so
 * the pair bounds the arrival. The calls themselves are the kernel's,
 * unchanged: return value and errno.
 *
 * A caller reads the time for its connection's descriptor; descriptors at
 * or above TTSIM_SENDSTAMP_MAX_FD are not noted (ttsim_sendstamp_last gives 0).
 */
#ifndef TTSIM_SENDSTAMP_H
#define TTSIM_SENDSTAMP_H

#define TTSIM_SENDSTAMP_MAX_FD 65536

/* CLOCK_MONOTONIC seconds at which the latest send on fd that took bytes
 * started and returned: 0, or -1 when none has. The pair is consistent when
 * read by the thread that sends on fd. */
int ttsim_sendstamp_last(int fd, double *start, double *end);

#endif
