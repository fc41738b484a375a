/*
 * outfile.c - atomic output files (outfile.h): a temporary file in the
 * target's directory, renamed over the target on commit.
 */
#include "base/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum status outfile_open(struct outfile *o, const char *path, struct status_info *si)
{
	const char *slash, *base;
	struct stat st;
	mode_t mask, mode;
	int fd, n;

	memset(o, 0, sizeof(*o));
	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		o->is_stdout = true;
		return STATUS_OK;
	}
	if (strlen(path) >= sizeof(o->path))
		return status_set_at(si, STATUS_LIMIT, path, 0, 0, "output path too long");
	strcpy(o->path, path);
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	if (!*base)
		return status_set_at(si, STATUS_USAGE, path, 0, 0, "output path names a directory");
	/* ".NAME.XXXXXX" in the same directory, so that rename(2) is atomic. */
	n = snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.XXXXXX", (int)(base - path), path, base);
	if (n < 0 || (size_t)n >= sizeof(o->tmp)) {
		o->tmp[0] = 0;
		return status_set_at(si, STATUS_LIMIT, path, 0, 0, "output path too long");
	}
	fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		o->tmp[0] = 0;
		return status_set_at(si, STATUS_IO, path, 0, 0, "cannot create: %s", strerror(e));
	}
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		mode = st.st_mode & 07777;
	} else {
		mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		o->tmp[0] = 0;
		return status_set_at(si, STATUS_IO, path, 0, 0, "cannot create: %s", strerror(e));
	}
	return STATUS_OK;
}

enum status outfile_commit(struct outfile *o, struct status_info *si)
{
	int e = 0;

	if (o->is_stdout) {
		if (fflush(stdout) != 0 || ferror(stdout))
			return status_set_at(si, STATUS_IO, "-", 0, 0, "write failed: %s", strerror(errno));
		return STATUS_OK;
	}
	if (!o->f)
		return status_set_at(si, STATUS_USAGE, o->path, 0, 0, "not open");
	if (fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0)
		e = errno ? errno : EIO;
	if (fclose(o->f) != 0 && !e)
		e = errno;
	o->f = NULL;
	if (!e && rename(o->tmp, o->path) != 0)
		e = errno;
	if (e) {
		unlink(o->tmp);
		o->tmp[0] = 0;
		return status_set_at(si, STATUS_IO, o->path, 0, 0, "write failed: %s", strerror(e));
	}
	o->tmp[0] = 0;
	return STATUS_OK;
}

void outfile_abort(struct outfile *o)
{
	if (o->is_stdout) {
		fflush(stdout);
		return;
	}
	if (o->f)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = 0;
}
