/*
 * rxstamp.h - the kernel's receive time of the bytes the load driver reads.
 *
 * Why: libcurl reads a socket with recv(2), and the loop can time a chunk
 * only when it gets to it. With a thousand streams the loop is often busy
 * with other streams when a chunk arrives, so a time taken in the loop is
 * late by however long that lasted, and inter-token gaps and TTFT would
 * measure the client's backlog. The kernel stamps every packet when it
 * receives it (SO_TIMESTAMPNS); only recvmsg(2) hands that stamp back.
 *
 * How: the ttaudit executable defines recv() (cli/recv.c) as rxstamp_recv();
 * the executable's definition is the one the dynamic linker binds libcurl's
 * recv calls to (as an executable's malloc replaces libc's). The library
 * itself never defines recv: a program that links libttbench.a without such
 * a definition gets libc's recv, no stamps, and every chunk loop-timed
 * (counted as such, never wrong). On a descriptor registered
 * with rxstamp_track() it reads with recvmsg(2) and keeps the stamp of the
 * bytes returned; on any other it is exactly recvfrom(fd, buf, n, flags,
 * NULL, NULL), which is what recv is. Return values and errno are the
 * kernel's in both cases.
 *
 * What a caller must know:
 *   - TCP merges packets waiting in the receive queue and keeps the newest
 *     stamp, and one read can return several packets: the stamp is that of
 *     the newest bytes returned, never earlier than any of them. A chunk
 *     read together with a later one is therefore stamped late, not early
 *     (rxstamp_mark below narrows that to the time between marks).
 *   - The stamp kept is that of the calling thread's latest read that
 *     returned data, on any descriptor: take it where that read's bytes
 *     are consumed (libcurl hands what one recv returned to the write
 *     callback before it reads again). A read on an untracked descriptor,
 *     or one whose bytes came without a stamp, leaves none. Reads that
 *     return nothing or only peek change nothing.
 *   - Descriptors at or above RXSTAMP_MAX_FD are not tracked (the caller
 *     times those itself).
 */
#ifndef TTAUDIT_RXSTAMP_H
#define TTAUDIT_RXSTAMP_H

#include <stddef.h>
#include <sys/types.h>

#define RXSTAMP_MAX_FD 65536
#define RXSTAMP_MARKS 32       /* unread marked segments kept per descriptor */
#define RXSTAMP_MARK_CAP (1u << 30)   /* the most queued bytes one mark counts */

/*
 * The kernel turns its receive stamping on for the first socket that asks
 * only some time later (deferred work), so the first packets of a run could
 * come unstamped. rxstamp_hold() opens a socket that keeps stamping on until
 * rxstamp_drop(); call it before connecting. Returns the descriptor, or -1
 * with errno (stamps may then be missing on the first packets: counted by
 * the caller as loop-timed, never wrong).
 */
int rxstamp_hold(void);
void rxstamp_drop(int hold);

/* Asks the kernel to stamp fd's received packets and starts keeping the
 * stamps. 0, or -1 with errno (fd out of range, setsockopt refused): fd is
 * then not tracked. */
int rxstamp_track(int fd);

/* recv(2) as the program's recv should do it: stamped on tracked
 * descriptors, exactly recvfrom(fd, buf, n, flags, NULL, NULL) on others. */
ssize_t rxstamp_recv(int fd, void *buf, size_t n, int flags);

/*
 * Why marks: TCP merges a packet into the one waiting before it, keeping
 * only the newer stamp, so a chunk that waits in the queue until the next
 * one arrives is stamped with the next one's time. A loop busy with a
 * thousand ready streams reaches the last of them milliseconds after they
 * became ready. rxstamp_mark(), called for every ready descriptor as soon as
 * the loop wakes and every so often while it works (a peek, about a
 * microsecond, nothing copied), notes the bytes queued beyond those already marked and the
 * newest stamp among them: a new segment, up to RXSTAMP_MARKS per
 * descriptor. Later reads return the segments in order, each on its own,
 * with its stamp; bytes past the last segment get the stamp of their own
 * read. The peek copies nothing (MSG_TRUNC). 0 when fd is tracked and has
 * bytes queued (marked now or before), -1 when there was nothing to mark
 * (untracked, nothing queued, no stamp); errno is left as it was.
 */
int rxstamp_mark(int fd);

/* Stops keeping stamps for fd (call before closing it: the number is reused). */
void rxstamp_untrack(int fd);

/*
 * Fixes the relation between CLOCK_REALTIME (the kernel's stamps) and
 * CLOCK_MONOTONIC that rxstamp_last uses, from the tightest of a few
 * paired readings. Call once before a run: every stamp of the run is then
 * converted with the same relation, so stamps in order stay in order and a
 * stamp converts to the same time however often it is asked for. Taken on
 * first use when never called. Not thread-safe against rxstamp_last.
 */
void rxstamp_clock_sync(void);

/*
 * The kernel receive time of the newest bytes the calling thread's latest
 * data-returning read returned, on CLOCK_MONOTONIC, in seconds. 0 and
 * *mono, or -1 when there is none (see above; also a stamp in the future,
 * which only a clock step can make).
 */
int rxstamp_last(double *mono);

#endif
