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

#include "base/lineread.h"

struct record_reader {
	FILE *f;
	char path[1024];
	struct lineread lr;
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
	lineread_init(&r->lr, r->f, RECORD_MAX_LINE);
	*out = r;
	return STATUS_OK;
}

void record_read_close(struct record_reader *r)
{
	if (!r)
		return;
	cJSON_Delete(r->o);
	lineread_release(&r->lr);
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
		len = lineread_next(&r->lr);
		if (len == LINEREAD_EOF) {
			if (ferror(r->f))
				return status_set_at(si, STATUS_IO, r->path, r->line, 0, "read failed");
			return STATUS_EOF;
		}
		if (len == LINEREAD_NOMEM)
			return status_set(si, STATUS_NOMEM, "out of memory");
		r->line++;
		if (len == LINEREAD_LONG)
			return status_set_at(si, STATUS_PARSE, r->path, r->line, 0,
					     "line longer than the cap (16 MiB)");
		while (len > 0 && (r->lr.buf[len - 1] == '\n' || r->lr.buf[len - 1] == '\r'))
			r->lr.buf[--len] = '\0';
		if (len)
			break;
	}
	r->o = cJSON_ParseWithLength(r->lr.buf, (size_t)len);
	if (!r->o || !cJSON_IsObject(r->o))
		return status_set_at(si, STATUS_PARSE, r->path, r->line, 0, "not a JSON object");
	if (!record_in_str(r->o, "kind"))
		return status_set_at(si, STATUS_PARSE, r->path, r->line, 0, "record without kind");
	record_in_fill(r->o, rec);
	return STATUS_OK;
}
