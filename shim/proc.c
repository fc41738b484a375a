/*
 * proc.c - how a process ends, as its capture says: exit (with the code main
 * returned or exit was given), _exit and _Exit, exec, and the signal deaths
 * of children this process reaps (wait, waitpid, wait3, wait4, waitid).
 *
 * Before _exit and exec the bytes still in stdio buffers never reach their
 * fd: they are counted lost. A line whose bytes reached the fd without a
 * '\n' after them is recorded with "partial":true. In a vfork child (which
 * runs in its parent's memory until it execs or exits) nothing is written
 * and nothing changed: the parent's capture is the parent's.
 */
#include "shim/shim.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHIM_API __attribute__((visibility("default")))
#define SHIM_NEED(fn) do { if (!shim_real.fn) shim_resolve(); } while (0)

extern char **environ;

/* --- the exit code --------------------------------------------------------- */

static int (*shim_main_real)(int, char **, char **);

static int shim_main(int argc, char **argv, char **envp)
{
	int r = shim_main_real(argc, argv, envp);

	shim_set_exit_code(r);
	return r;
}

/*
 * The program's _start calls this through its PLT: main is wrapped so that
 * the value it returns (which glibc passes to exit internally, where no
 * wrapper sees it) reaches the end record.
 */
SHIM_API int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv,
			       void (*init)(void), void (*fini)(void), void (*rtld_fini)(void),
			       void *stack_end)
{
	SHIM_NEED(libc_start_main);
	shim_main_real = main;
	return shim_real.libc_start_main(shim_main, argc, argv, init, fini, rtld_fini, stack_end);
}

SHIM_API void exit(int code)
{
	SHIM_NEED(exit);
	shim_set_exit_code(code);
	shim_real.exit(code);
}

/* --- _exit, exec ----------------------------------------------------------- */

/* The records of an end that skips stdio's flush. Returns the partial lines recorded. */
static uint64_t shim_end_abrupt(const char *how, int code, enum ring_lost why)
{
	struct shim_ending e = { how, code, 0 };
	uint64_t k, pending = shim_stdio_pending_lines();

	/* an exec may fail: with a reader its loss is told with the end, which a failure voids */
	if (why == RING_LOST_STDIO_EXEC && shim_ringed())
		e.stdio_lost = pending;
	else
		shim_lost(why, pending);
	k = shim_stream_finish_all(why == RING_LOST_STDIO_EXEC);
	shim_write_end(&e);
	return k;
}

static int shim_ours(void)
{
	return shim_on && shim_depth == 0 && !shim_foreign();
}

SHIM_API void _exit(int code)
{
	SHIM_NEED(_exit);
	if (shim_ours())
		shim_end_abrupt("_exit", code & 0xff, RING_LOST_STDIO_EXIT);
	shim_real._exit(code);
}

SHIM_API void _Exit(int code)
{
	SHIM_NEED(_Exit);
	if (shim_ours())
		shim_end_abrupt("_exit", code & 0xff, RING_LOST_STDIO_EXIT);
	shim_real._Exit(code);
}

SHIM_API void quick_exit(int code)
{
	SHIM_NEED(quick_exit);
	if (shim_ours())
		shim_end_abrupt("_exit", code & 0xff, RING_LOST_STDIO_EXIT);
	shim_real.quick_exit(code);
}

/* Before an exec: what it will lose, what it leaves half written, and the end. */
static int shim_exec_begin(uint64_t *partial)
{
	if (!shim_ours())
		return 0;
	*partial = shim_end_abrupt("exec", -1, RING_LOST_STDIO_EXEC);
	return 1;
}

/* The exec returned: it failed, and the process goes on. */
static void shim_exec_end(int began, uint64_t partial)
{
	int e = errno;

	if (began)
		shim_exec_failed(e, partial);
	errno = e;
}

SHIM_API int execve(const char *path, char *const argv[], char *const envp[])
{
	uint64_t k = 0;
	int began, r;

	SHIM_NEED(execve);
	began = shim_exec_begin(&k);
	r = shim_real.execve(path, argv, envp);
	shim_exec_end(began, k);
	return r;
}

SHIM_API int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

SHIM_API int execvp(const char *file, char *const argv[])
{
	uint64_t k = 0;
	int began, r;

	SHIM_NEED(execvp);
	began = shim_exec_begin(&k);
	r = shim_real.execvp(file, argv);
	shim_exec_end(began, k);
	return r;
}

SHIM_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	uint64_t k = 0;
	int began, r;

	SHIM_NEED(execvpe);
	began = shim_exec_begin(&k);
	r = shim_real.execvpe(file, argv, envp);
	shim_exec_end(began, k);
	return r;
}

SHIM_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	uint64_t k = 0;
	int began, r;

	SHIM_NEED(fexecve);
	began = shim_exec_begin(&k);
	r = shim_real.fexecve(fd, argv, envp);
	shim_exec_end(began, k);
	return r;
}

/*
 * execl and friends: the arguments into an array (on the stack up to 1024,
 * else mmap'd: no malloc in a process that may be a vfork child), then the
 * v-form.
 */
#define SHIM_EXECL_STACK 1024

static char **shim_argv(const char *arg0, va_list ap, char **stack, size_t *mapped, char ***envp)
{
	va_list count;
	size_t n = 1, i;
	char **v = stack;

	va_copy(count, ap);
	if (arg0)
		while (va_arg(count, char *))
			n++;
	va_end(count);
	*mapped = 0;
	if (n + 1 > SHIM_EXECL_STACK) {
		*mapped = (n + 1) * sizeof(char *);
		v = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (v == MAP_FAILED)
			return NULL;
	}
	v[0] = (char *)arg0;
	for (i = 1; arg0 && i < n; i++)
		v[i] = va_arg(ap, char *);
	v[arg0 ? n : 1] = NULL;
	if (envp) {
		(void)va_arg(ap, char *);   /* the NULL that ends the list */
		*envp = va_arg(ap, char **);
	}
	return v;
}

enum { SHIM_EXECL, SHIM_EXECLP, SHIM_EXECLE };

static int shim_execl(int which, const char *path, const char *arg, va_list ap)
{
	char *stack[SHIM_EXECL_STACK], **envp = NULL, **v;
	size_t mapped;
	int r, e;

	v = shim_argv(arg, ap, stack, &mapped, which == SHIM_EXECLE ? &envp : NULL);
	if (!v) {
		errno = E2BIG;
		return -1;
	}
	if (which == SHIM_EXECLP)
		r = execvp(path, v);
	else
		r = execve(path, v, which == SHIM_EXECLE ? envp : environ);
	e = errno;
	if (mapped)
		munmap(v, mapped);
	errno = e;
	return r;
}

SHIM_API int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = shim_execl(SHIM_EXECL, path, arg, ap);
	va_end(ap);
	return r;
}

SHIM_API int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = shim_execl(SHIM_EXECLP, file, arg, ap);
	va_end(ap);
	return r;
}

SHIM_API int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = shim_execl(SHIM_EXECLE, path, arg, ap);
	va_end(ap);
	return r;
}

/* --- children ending ---------------------------------------------------------- */

/* A reaped child that a signal ended gets an end record from its parent. */
static void shim_reaped(pid_t pid, int status)
{
	int e = errno;

	if (pid > 0 && shim_on && shim_depth == 0 && !shim_foreign() && WIFSIGNALED(status))
		shim_child_end(pid, status);
	errno = e;
}

SHIM_API pid_t waitpid(pid_t pid, int *status, int options)
{
	int st = 0;
	pid_t r;

	SHIM_NEED(waitpid);
	r = shim_real.waitpid(pid, &st, options);
	if (r > 0 && status)
		*status = st;
	shim_reaped(r, st);
	return r;
}

SHIM_API pid_t wait(int *status)
{
	return waitpid(-1, status, 0);
}

SHIM_API pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	int st = 0;
	pid_t r;

	SHIM_NEED(wait4);
	r = shim_real.wait4(pid, &st, options, ru);
	if (r > 0 && status)
		*status = st;
	shim_reaped(r, st);
	return r;
}

SHIM_API pid_t wait3(int *status, int options, struct rusage *ru)
{
	return wait4(-1, status, options, ru);
}

SHIM_API int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	int r;

	SHIM_NEED(waitid);
	r = shim_real.waitid(idtype, id, info, options);
	if (r == 0 && info && info->si_pid > 0 && !(options & WNOWAIT) &&
	    (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED))
		shim_reaped(info->si_pid, info->si_status & 0x7f);
	return r;
}
