/* test_models.c - the /v1/models reader: finding a model, entry fields, and every way a list is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "probe/models.h"

static struct models *parse_ok(const char *body)
{
	struct status_info si = { 0 };
	struct models *m = NULL;

	assert_int_equal(models_parse(body, strlen(body), &m, &si), STATUS_OK);
	assert_non_null(m);
	return m;
}

static void parse_bad(const char *body, enum status want, const char *msg_part)
{
	struct status_info si = { 0 };
	struct models *m = (struct models *)&si;

	assert_int_equal(models_parse(body, strlen(body), &m, &si), want);
	assert_null(m);
	if (!strstr(si.msg, msg_part))
		fail_msg("'%s': message '%s' lacks '%s'", body, si.msg, msg_part);
}

static void test_find(void **state)
{
	struct models *m = parse_ok("{\"object\":\"list\",\"data\":[7,{\"id\":3},"
				    "{\"id\":\"meta-llama/Llama-3.1-8B\",\"max_model_len\":131072},"
				    "{\"id\":\"other\"}]}");

	(void)state;
	assert_int_equal(models_count(m), 4);
	assert_int_equal(models_find(m, NULL), 2);   /* the first with a string id */
	assert_int_equal(models_find(m, "other"), 3);
	assert_int_equal(models_find(m, "oth"), -1);  /* lengths count */
	assert_int_equal(models_find(m, "missing"), -1);
	assert_string_equal(models_id(m, 2), "meta-llama/Llama-3.1-8B");
	assert_null(models_id(m, 0));   /* not an object */
	assert_null(models_id(m, 1));   /* id not a string */
	assert_null(models_id(m, 9));
	assert_int_equal(models_field(m, 2, "max_model_len")->type, JT_INT);
	assert_int_equal(models_field(m, 2, "max_model_len")->u.i, 131072);
	assert_null(models_field(m, 3, "max_model_len"));
	assert_null(models_field(m, 0, "id"));
	models_free(m);
}

static void test_empty_list(void **state)
{
	struct models *m = parse_ok("{\"data\":[]}");

	(void)state;
	assert_int_equal(models_count(m), 0);
	assert_int_equal(models_find(m, NULL), -1);
	models_free(m);
}

/* The body is not referenced after the parse: ids are the reader's own copies. */
static void test_owns_strings(void **state)
{
	char body[] = "{\"data\":[{\"id\":\"abc\"}]}";
	struct models *m = parse_ok(body);

	(void)state;
	memset(body, 'x', sizeof(body) - 1);
	assert_string_equal(models_id(m, 0), "abc");
	models_free(m);
}

static void test_refused(void **state)
{
	(void)state;
	parse_bad("", STATUS_PARSE, "not JSON at byte 1");
	parse_bad("<html>", STATUS_PARSE, "not JSON at byte 1");
	parse_bad("{\"data\":[]} x", STATUS_PARSE, "not JSON at byte 13");
	parse_bad("{\"data\":{}}", STATUS_PARSE, "not a model list (no data array)");
	parse_bad("[{\"id\":\"a\"}]", STATUS_PARSE, "not a model list (no data array)");
	parse_bad("{\"models\":[]}", STATUS_PARSE, "not a model list (no data array)");
	models_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_empty_list),
		cmocka_unit_test(test_owns_strings),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
