/* test_driver.c - what the driver reads from /metrics: config hash, prefix-cache hits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "bench/driver.h"
#include "bench/srvmetrics.h"

static const char m1[] =
	"# TYPE vllm:cache_config_info gauge\n"
	"vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\"} 1.0\n"
	"vllm:prefix_cache_hits_total{engine=\"0\"} 96.0\n"
	"vllm:prefix_cache_hits_total{engine=\"1\"} 4.0\n";
/* the same labels in another order, other samples changed */
static const char m2[] =
	"vllm:prefix_cache_hits_total{engine=\"0\"} 5.0\n"
	"vllm:cache_config_info{cache_dtype=\"auto\",block_size=\"16\"} 1.0\n";
/* a configuration that differs */
static const char m3[] =
	"vllm:cache_config_info{block_size=\"32\",cache_dtype=\"auto\"} 1.0\n";
static const char none[] = "vllm:num_requests_running 0\n";

static void test_config_hash(void **state)
{
	char h1[32], h2[32], h3[32], h4[32];

	(void)state;
	assert_int_equal(srvmetrics_config_hash(m1, strlen(m1), h1, sizeof(h1), NULL), STATUS_OK);
	assert_int_equal(srvmetrics_config_hash(m2, strlen(m2), h2, sizeof(h2), NULL), STATUS_OK);
	assert_int_equal(srvmetrics_config_hash(m3, strlen(m3), h3, sizeof(h3), NULL), STATUS_OK);
	assert_int_equal(strncmp(h1, "fnv1a64:", 8), 0);
	assert_string_equal(h1, h2);
	assert_string_not_equal(h1, h3);
	/* no *_info sample: no hash, not a hash of nothing */
	assert_int_equal(srvmetrics_config_hash(none, strlen(none), h4, sizeof(h4), NULL), STATUS_OK);
	assert_string_equal(h4, "");
	assert_int_equal(srvmetrics_config_hash("bad{ 1\n", 7, h4, sizeof(h4), NULL), STATUS_PARSE);
}

static void test_prefix_hits(void **state)
{
	double hits = -1;
	struct status_info si = { 0 };

	(void)state;
	assert_int_equal(srvmetrics_prefix_hits(m1, strlen(m1), &hits, NULL), STATUS_OK);
	assert_true(hits == 100.0);   /* summed over engines */
	assert_int_equal(srvmetrics_prefix_hits(none, strlen(none), &hits, &si), STATUS_NOTFOUND);
	assert_non_null(strstr(si.msg, "prefix_cache_hits"));
	/* an older name without _total */
	assert_int_equal(srvmetrics_prefix_hits("vllm:prefix_cache_hits 3\n", 25, &hits, NULL), STATUS_OK);
	assert_true(hits == 3.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_hash),
		cmocka_unit_test(test_prefix_hits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
