/* slowload.c - preloaded into llama-server by tests/interop/10-ready.sh: an
 * open of a *.gguf file waits until the file named by SLOWLOAD_GATE exists
 * (at most 120 s), so the server's loading phase, in which every route answers
 * 503, lasts exactly as long as the test wants: no race with a fast load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void gate(const char *path)
{
	const char *g = getenv("SLOWLOAD_GATE");
	size_t n = path ? strlen(path) : 0;
	struct stat st;
	int i;

	if (!g || n < 5 || strcmp(path + n - 5, ".gguf"))
		return;
	for (i = 0; i < 12000 && stat(g, &st) != 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
}

FILE *fopen(const char *path, const char *mode)
{
	static FILE *(*real)(const char *, const char *);

	if (!real)
		real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
	gate(path);
	return real(path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	static FILE *(*real)(const char *, const char *);

	if (!real)
		real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen64");
	gate(path);
	return real(path, mode);
}
