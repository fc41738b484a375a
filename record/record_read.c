/*
 * record_read.c - the run records read back (record_read.h), one record at a
 * time, with one policy for a malformed line.
 */
#include "record/record_read.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/alloc.h"

struct record_reader {
	FILE *f;
	char path[1024];
	char *buf;
	size_t cap;
	long line;
	cJSON *o;            /* the record last returned */
};

enum status record_read_open(struct record_reader **out, const char *path, struct status_info *si)
{
	struct record_reader *r;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return status_set(si, STATUS_NOMEM, "%s: out of memory", path);
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->f = fopen(path, "re");
	if (!r->f) {
		int e = errno;

		free(r);
		return status_set_at(si, STATUS_IO, path, 0, 0, "cannot open: %s", strerror(e));
	}
	*out = r;
	return STATUS_OK;
}

void record_read_close(struct record_reader *r)
{
	if (!r)
		return;
	cJSON_Delete(r->o);
	free(r->buf);
	fclose(r->f);
	free(r);
}

const struct cJSON *record_read_object(const struct record_reader *r)
{
	return r->o;
}

long record_read_line(const struct record_reader *r)
{
	return r->line;
}

/*
 * Reads one line into r->buf (grown up to max + 1 bytes, NUL-terminated, the
 * newline kept). Returns its length, -1 at the end or on an error; a longer
 * line is skipped to its end and returns -2.
 */
static ssize_t record_getline(struct record_reader *r, size_t max)
{
	size_t n = 0;
	int ch;

	while ((ch = getc(r->f)) != EOF) {
		if (n + 2 > r->cap) {
			if (n + 2 > max + 2) {
				while ((ch = getc(r->f)) != EOF && ch != '\n')
					;
				return -2;
			}
			if (ALLOC_GROW_MAX(r->buf, n + 2, r->cap, max + 2) < 0)
				return -3;
		}
		r->buf[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	if (!n)
		return -1;
	r->buf[n] = '\0';
	return (ssize_t)n;
}

static double record_in_num(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *record_in_str(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void record_in_fill(const cJSON *o, struct record_in *rec)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "identity");
	const cJSON *fig = cJSON_GetObjectItemCaseSensitive(o, "figures");

	memset(rec, 0, sizeof(*rec));
	rec->kind_name = record_in_str(o, "kind");
	rec->kind = !strcmp(rec->kind_name, "run") ? RECORD_KIND_RUN :
		    !strcmp(rec->kind_name, "request") ? RECORD_KIND_REQUEST : RECORD_KIND_OTHER;
	rec->run_id = record_in_str(o, "run_id");
	rec->phase = record_in_str(o, "phase");
	if (rec->kind == RECORD_KIND_RUN) {
		rec->arm = record_in_str(id, "arm");
		rec->arm_state = record_in_str(id, "arm_state");
	} else {
		rec->arm = record_in_str(o, "arm");
	}
	rec->arm_index = record_in_num(o, "arm_index");
	rec->repeat = record_in_num(o, "repeat");
	rec->wall_start = record_in_num(o, "wall_start");
	rec->wall_end = record_in_num(o, "wall_end");
	rec->mono_start = record_in_num(o, "mono_start");
	rec->mono_end = record_in_num(o, "mono_end");
	rec->has_figures = fig != NULL;
	rec->makespan_s = record_in_num(fig, "makespan_s");
	rec->output_tok_s = record_in_num(fig, "output_tok_s");
	rec->ttft_p50 = record_in_num(fig ? cJSON_GetObjectItemCaseSensitive(fig, "ttft_s") : NULL, "p50");
	rec->itl_p50 = record_in_num(fig ? cJSON_GetObjectItemCaseSensitive(fig, "itl_s") : NULL, "p50");
	rec->has_correctness = cJSON_GetObjectItemCaseSensitive(o, "correctness") != NULL ||
			       cJSON_GetObjectItemCaseSensitive(o, "canary") != NULL;
	rec->id = record_in_str(o, "id");
	rec->request_id = record_in_str(o, "request_id");
	rec->verdict = record_in_str(o, "verdict");
	{
		const cJSON *can = cJSON_GetObjectItemCaseSensitive(o, "canary");
		const cJSON *leak = can ? cJSON_GetObjectItemCaseSensitive(can, "leak") : NULL;

		rec->leak_donor_id = record_in_str(leak, "donor_id");
		rec->leak_at = record_in_num(leak, "at");
		rec->leak_at_span = record_in_num(leak, "at_span");
	}
	rec->index = record_in_num(o, "index");
	rec->prompt_index = record_in_num(o, "prompt_index");
	rec->prompt_tokens = record_in_num(o, "prompt_tokens");
	rec->diverged_at = record_in_num(o, "diverged_at");
	rec->diverged_tokens = record_in_num(o, "diverged_tokens");
	rec->ttft_s = record_in_num(o, "ttft_s");
	rec->ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok"));
}

enum status record_read_next(struct record_reader *r, struct record_in *rec, struct status_info *si)
{
	ssize_t len;

	cJSON_Delete(r->o);
	r->o = NULL;
	for (;;) {
		len = record_getline(r, RECORD_MAX_LINE);
		if (len == -1) {
			if (ferror(r->f))
				return status_set_at(si, STATUS_IO, r->path, r->line, 0, "read failed");
			return STATUS_EOF;
		}
		if (len == -3)
			return status_set(si, STATUS_NOMEM, "out of memory");
		r->line++;
		if (len == -2)
			return status_set_at(si, STATUS_PARSE, r->path, r->line, 0,
					     "line longer than the cap (16 MiB)");
		while (len > 0 && (r->buf[len - 1] == '\n' || r->buf[len - 1] == '\r'))
			r->buf[--len] = '\0';
		if (len)
			break;
	}
	r->o = cJSON_ParseWithLength(r->buf, (size_t)len);
	if (!r->o || !cJSON_IsObject(r->o))
		return status_set_at(si, STATUS_PARSE, r->path, r->line, 0, "not a JSON object");
	if (!record_in_str(r->o, "kind"))
		return status_set_at(si, STATUS_PARSE, r->path, r->line, 0, "record without kind");
	record_in_fill(r->o, rec);
	return STATUS_OK;
}
