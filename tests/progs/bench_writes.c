/*
 * bench_writes.c - the C half of the shim's speed benchmark
 * (scripts/bench-shim.sh): N unbuffered write(2) calls of one log line each,
 * one in ten a merge-audit line.
 *
 * With FLOOR (a path), no shim is needed to measure what the shim cannot
 * avoid: after each audit line the program itself writes one record-sized
 * line (as long as the shim's audit record) to FLOOR, opened O_APPEND, the
 * one extra system call per captured line that the shim makes.
 *
 * usage: bench_writes N [FLOOR]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 180000, i;
	int floor_fd = -1;
	char buf[256], rec[512];

	if (argc > 2) {
		floor_fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (floor_fd < 0) {
			perror(argv[2]);
			return 2;
		}
	}
	for (i = 0; i < n; i++) {
		int len;
		if (i % 10 == 0)
			len = snprintf(buf, sizeof(buf), "INFO 11-29 20:41:02 [generator.py:1930] MERGE_AUDIT "
				       "{\"ev\":\"merge\",\"step\":%ld,\"host_pos\":[22,25,27,25,22,25,27,27],"
				       "\"dev_pos\":[23,26,28,26,23,26,28,28]}\n", i);
		else
			len = snprintf(buf, sizeof(buf), "INFO 11-29 20:41:02 [engine.py:412] decode step %ld "
				       "batch 8 tokens 8 elapsed 0.0123 s\n", i);
		if (write(1, buf, (size_t)len) != len)
			return 1;
		if (floor_fd >= 0 && i % 10 == 0) {
			/* the shim's audit record for this line, about 200 bytes */
			const char *obj = strchr(buf, '{');
			int k = snprintf(rec, sizeof(rec), "{\"src\":\"audit\",\"t\":1795988019.255950,"
					 "\"mono\":3621.564373,\"pid\":18560,\"tid\":18560,\"fd\":1,\"event\":%.*s}\n",
					 (int)(buf + len - 1 - obj), obj);
			if (write(floor_fd, rec, (size_t)k) != k)
				return 1;
		}
	}
	return 0;
}
