/*
 * lock.h - the exclusive host lock.
 *
 * A Tenstorrent host runs one tt-metal process at a time, and not one per
 * card: a second process on /dev/tenstorrent/1 still fails with "another
 * process is already holding the sysmem NOC address space". So the lock is
 * per host, not per device.
 *
 * The lock is a directory (mkdir is atomic) holding a file "owner" with
 * user, host, pid, start time and command. It is never stolen: a lock whose
 * pid is dead is reported as stale, with the command a person should run to
 * remove it after checking, because a pid that looks dead from here may be
 * a process in another pid namespace still driving the cards.
 *
 * lock_run() holds the lock for the duration of a command and releases it on
 * exit and on SIGINT, SIGTERM and SIGHUP. Its handler forwards the signal to
 * the command, waits for it, releases, and exits: a handler that returns
 * lets the interrupted code carry on (the shell-trap version of this lock was
 * released on SIGTERM while its script went on launching containers
 * unlocked). A second signal while waiting kills ttaudit with the lock left
 * in place, which then reads as stale: the safe direction.
 */
#ifndef TTAUDIT_LOCK_H
#define TTAUDIT_LOCK_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/status.h"

#define LOCK_DEFAULT_DIR "/tmp/ttaudit-host.lock"
#define LOCK_PATH_MAX 1024

enum lock_state {
	LOCK_FREE,        /* no lock directory */
	LOCK_HELD,        /* held by a live process */
	LOCK_STALE,       /* its pid is dead on this host */
	LOCK_UNKNOWN,     /* directory present, owner unreadable (being created, or damaged) */
};

struct lock_owner {
	char user[64];
	char host[256];
	long pid;
	long long started;          /* seconds since the epoch */
	char command[1024];
};

struct lock;

/* A handle for the lock directory `dir` (NULL: LOCK_DEFAULT_DIR). NULL on bad path or memory. */
struct lock *lock_new(const char *dir);
/* Frees the handle; releases the lock first if this handle holds it. */
void lock_free(struct lock *l);
const char *lock_dir(const struct lock *l);

/*
 * Takes the lock for `command` (recorded in the owner file). STATUS_BUSY
 * when someone holds it (live, stale or unknown: *holder and *state say
 * which; a stale lock is not taken either), STATUS_IO on other errors.
 */
enum status lock_acquire(struct lock *l, const char *command, struct lock_owner *holder,
			 enum lock_state *state, struct status_info *si);

/* Releases a lock this handle holds (only when the owner file names our pid). */
enum status lock_release(struct lock *l, struct status_info *si);

/* Who holds the lock now, without taking it. */
enum status lock_inspect(const struct lock *l, struct lock_owner *holder, enum lock_state *state,
			 struct status_info *si);

/* "free", "held", "stale", "unknown". */
const char *lock_state_name(enum lock_state s);

/* The command a person should run to remove a stale lock, in buf. */
const char *lock_remove_command(const struct lock *l, char *buf, size_t n);

/*
 * Runs argv (argv[0] searched in PATH) while holding l, which must already
 * be acquired. *exit_code: the command's exit status, or 128 + signal.
 * Releases the lock before returning. Only one lock_run per process.
 */
enum status lock_run(struct lock *l, char *const argv[], int *exit_code, struct status_info *si);

/* 1 when pid is this process or one of its ancestors (read from /proc). */
int lock_pid_is_ours(long pid);

#endif
