#include "capture/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/banner.h"
#include "capture/envlist.h"

#include "config.h"

static int launch_is_file(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

enum status launch_find_shim(char *buf, size_t cap, struct status_info *si)
{
	const char *env = getenv("TTAUDIT_SHIM");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env) {
		if (!launch_is_file(env))
			return status_set(si, STATUS_NOTFOUND, "TTAUDIT_SHIM '%s' is not a file", env);
		if ((size_t)snprintf(buf, cap, "%s", env) >= cap)
			return status_set(si, STATUS_LIMIT, "TTAUDIT_SHIM path too long");
		return STATUS_OK;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* Beside the executable (a build tree), then where the install put
			 * it relative to the executable, so that an installed tree works
			 * wherever it was copied (DESTDIR, a relocated prefix). */
			if ((size_t)snprintf(buf, cap, "%s/%s", exe, LAUNCH_SHIM_NAME) < cap &&
			    launch_is_file(buf))
				return STATUS_OK;
			if ((size_t)snprintf(buf, cap, "%s/%s/%s", exe, TTAUDIT_BIN_TO_LIB,
					     LAUNCH_SHIM_NAME) < cap && launch_is_file(buf))
				return STATUS_OK;
		}
	} else {
		exe[0] = '\0';
	}
	if ((size_t)snprintf(buf, cap, "%s/%s", TTAUDIT_LIBDIR, LAUNCH_SHIM_NAME) < cap &&
	    launch_is_file(buf))
		return STATUS_OK;
	return status_set(si, STATUS_NOTFOUND,
			  "%s not found in '%s' nor in '%s' (set TTAUDIT_SHIM to its path)",
			  LAUNCH_SHIM_NAME, exe, TTAUDIT_LIBDIR);
}

/* Absolute form of p (the command may change directory); NULL on failure. */
char *launch_absolute(const char *p)
{
	char cwd[PATH_MAX];
	char *s;

	if (p[0] == '/')
		return strdup(p);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	s = malloc(strlen(cwd) + strlen(p) + 2);
	if (s)
		sprintf(s, "%s/%s", cwd, p);
	return s;
}

enum status launch_capture_file(const char *path, int append, int per_pid, int *fd,
				struct status_info *si)
{
	struct stat st;
	char dir[PATH_MAX];
	const char *slash;
	int f;

	*fd = -1;
	if (per_pid) {
		/* files PATH.<pid> are made later: the directory must take them */
		slash = strrchr(path, '/');
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else if ((size_t)(slash - path) >= sizeof(dir))
			return status_set(si, STATUS_IO, "%s: path too long", path);
		else
			snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
		if (stat(dir, &st))
			return status_set(si, STATUS_IO, "%s: cannot create capture files in '%s': %s", path, dir,
					  strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return status_set(si, STATUS_IO, "%s: '%s' is not a directory", path, dir);
		if (access(dir, W_OK | X_OK))
			return status_set(si, STATUS_IO, "%s: cannot create capture files in '%s': %s", path, dir,
					  strerror(errno));
		return STATUS_OK;
	}
	f = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	if (f < 0) {
		int e = errno;
		if (e == ELOOP)
			return status_set(si, STATUS_IO, "%s: is a symbolic link: the capture file must be a regular file", path);
		if (e == EISDIR)
			return status_set(si, STATUS_IO, "%s: is a directory", path);
		return status_set(si, STATUS_IO, "%s: cannot create the capture file: %s", path, strerror(e));
	}
	if (fstat(f, &st)) {
		close(f);
		return status_set(si, STATUS_IO, "%s: %s", path, strerror(errno));
	}
	if (!S_ISREG(st.st_mode)) {
		close(f);
		return status_set(si, STATUS_IO, "%s: is not a regular file", path);
	}
	if (st.st_uid != geteuid()) {
		close(f);
		return status_set(si, STATUS_IO, "%s: is owned by uid %ld, not by this user (uid %ld)", path,
				  (long)st.st_uid, (long)geteuid());
	}
	/* 0600 whether it is new or was there: captures hold a server's environment */
	if (fchmod(f, 0600) || (!append && ftruncate(f, 0))) {
		int e = errno;
		close(f);
		return status_set(si, STATUS_IO, "%s: %s", path, strerror(e));
	}
	fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK);
	*fd = f;
	return STATUS_OK;
}

static enum status launch_setenv(const char *name, const char *value, struct status_info *si)
{
	int r = value ? setenv(name, value, 1) : unsetenv(name);

	return r ? status_set(si, STATUS_NOMEM, "cannot set %s: %s", name, strerror(errno)) : STATUS_OK;
}

enum status launch_check(const struct launch_opts *o, struct status_info *si)
{
	struct banner_set *rules = NULL;
	struct envlist el;
	enum status st = STATUS_OK;

	if (o->rules)
		st = banner_set_load(o->rules, &rules, si);
	banner_set_free(rules);
	envlist_init(&el);
	if (st == STATUS_OK)
		st = envlist_add(&el, ENVLIST_DEFAULT, si);
	if (st == STATUS_OK && o->env)
		st = envlist_add(&el, o->env, si);
	return st;
}

enum status launch_setup(const struct launch_opts *o, const char *shim, struct status_info *si)
{
	char *out = NULL, *rules_abs = NULL, *env = NULL, *preload = NULL;
	const char *old;
	enum status st;
	int fd;

	st = launch_check(o, si);
	if (st != STATUS_OK)
		goto out;
	st = STATUS_NOMEM;
	out = launch_absolute(o->out);
	rules_abs = o->rules ? launch_absolute(o->rules) : NULL;
	if (!out || (o->rules && !rules_abs)) {
		status_set(si, st, "cannot make an absolute path (current directory unreadable?)");
		goto out;
	}
	if (o->env) {
		env = malloc(strlen(ENVLIST_DEFAULT) + strlen(o->env) + 2);
		if (!env) {
			status_set(si, st, "out of memory");
			goto out;
		}
		sprintf(env, "%s,%s", ENVLIST_DEFAULT, o->env);
	}
	old = getenv("LD_PRELOAD");
	preload = malloc(strlen(shim) + (old ? strlen(old) : 0) + 2);
	if (!preload) {
		status_set(si, st, "out of memory");
		goto out;
	}
	if (old && *old)
		sprintf(preload, "%s:%s", shim, old);
	else
		strcpy(preload, shim);
	/*
	 * With per_pid each process writes CAPTURE.<pid>; the base name stays
	 * unused. With append and not opened (ttaudit passthrough: the file is
	 * the launch's), the file is left alone: the shim opens it itself
	 * (never through a symlink) and says so in its stderr when it cannot.
	 */
	if (!o->opened && !o->append) {
		st = launch_capture_file(out, o->append, o->per_pid, &fd, si);
		if (st != STATUS_OK)
			goto out;
		if (fd >= 0)
			close(fd);
	}
	if ((st = launch_setenv("TTAUDIT_CAPTURE", out, si)) ||
	    (st = launch_setenv("TTAUDIT_RINGS", o->rings, si)) ||
	    (st = launch_setenv("TTAUDIT_RULES", rules_abs, si)) ||
	    (st = launch_setenv("TTAUDIT_ENV", env, si)) ||
	    (st = launch_setenv("TTAUDIT_WATCH", o->watch, si)) ||
	    (st = launch_setenv("TTAUDIT_ALL_LINES", o->all_lines ? "1" : NULL, si)) ||
	    (st = launch_setenv("TTAUDIT_PER_PID", o->per_pid ? "1" : NULL, si)) ||
	    (st = launch_setenv("LD_PRELOAD", preload, si)))
		goto out;
	st = STATUS_OK;
out:
	free(out);
	free(rules_abs);
	free(env);
	free(preload);
	return st;
}
