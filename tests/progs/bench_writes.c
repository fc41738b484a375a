/*
 * bench_writes.c - the C half of the shim's speed benchmark
 * (tools/bench-shim.sh): N unbuffered write(2) calls of one log line each,
 * one in ten a merge-audit line.
 *
 * usage: bench_writes N
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 180000, i;
	char buf[256];

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
	}
	return 0;
}
