// bench-simdjson.cpp - the simdjson yardstick of `make bench` (scripts/bench-replay.py):
// reads a merge-audit JSONL with simdjson On Demand, either only the host_pos and
// dev_pos arrays of merge lines ("positions") or every value of every line ("all").
// A benchmark program only: Debian's libsimdjson-dev, never linked into ttaudit.
//
// usage: bench-simdjson FILE positions|all
#include <simdjson.h>

#include <cstdio>
#include <cstring>

using namespace simdjson;

static bool value_sum(ondemand::value v, uint64_t &sum)
{
	ondemand::json_type t;
	if (v.type().get(t))
		return false;
	switch (t) {
	case ondemand::json_type::array:
		for (auto e : v.get_array()) {
			ondemand::value x;
			if (e.get(x) || !value_sum(x, sum))
				return false;
		}
		return true;
	case ondemand::json_type::object:
		for (auto f : v.get_object()) {
			ondemand::value x;
			if (f.value().get(x) || !value_sum(x, sum))
				return false;
		}
		return true;
	case ondemand::json_type::number: {
		int64_t i;
		if (v.get_int64().get(i))
			return false;
		sum += (uint64_t)i;
		return true;
	}
	case ondemand::json_type::string: {
		std::string_view s;
		if (v.get_string().get(s))
			return false;
		sum += s.size();
		return true;
	}
	case ondemand::json_type::boolean: {
		bool b;
		if (v.get_bool().get(b))
			return false;
		sum += b;
		return true;
	}
	case ondemand::json_type::null:
		return v.is_null();
	}
	return false;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bench-simdjson FILE positions|all\n");
		return 2;
	}
	bool all = !strcmp(argv[2], "all");
	padded_string data;
	if (padded_string::load(argv[1]).get(data)) {
		fprintf(stderr, "bench-simdjson: cannot read %s\n", argv[1]);
		return 2;
	}
	ondemand::parser parser;
	ondemand::document_stream docs;
	if (parser.iterate_many(data, 1 << 20).get(docs))
		return 2;
	uint64_t merges = 0, sum = 0, errors = 0;
	for (auto doc : docs) {
		ondemand::object o;
		if (doc.get_object().get(o)) {
			errors++;
			continue;
		}
		if (all) {
			for (auto f : o) {
				ondemand::value v;
				if (f.value().get(v) || !value_sum(v, sum))
					errors++;
			}
			continue;
		}
		std::string_view ev;
		if (o["ev"].get_string().get(ev) || ev != "merge")
			continue;
		merges++;
		for (const char *k : { "host_pos", "dev_pos" }) {
			ondemand::array a;
			if (o.find_field_unordered(k).get_array().get(a)) {
				errors++;
				continue;
			}
			for (auto v : a) {
				int64_t i;
				if (v.get_int64().get(i))
					errors++;
				else
					sum += (uint64_t)i;
			}
		}
	}
	printf("%llu merges, sum %llu, %llu errors\n", (unsigned long long)merges,
	       (unsigned long long)sum, (unsigned long long)errors);
	return errors ? 1 : 0;
}
