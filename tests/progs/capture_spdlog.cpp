// capture_spdlog.cpp - an spdlog (Debian's libspdlog, with libfmt) host for
// the capture tests and scripts/bench-shim.sh: THREADS threads logging through
// one multi-threaded stdout logger (spdlog's stdout sink: fwrite to stdout)
// and, when FILE is given, a basic_file_sink (fwrite to its own FILE, the
// way tt-metal logs with TT_METAL_LOGGER_FILE). One line in ten is a merge
// audit; the others are `decode step N ...`, or with WORDING=fragments a
// line holding a fragment of every built-in banner rule (bench (b)).
//
// usage: capture_spdlog THREADS LINES [FILE] [WORDING]
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv)
{
	int threads = argc > 1 ? std::atoi(argv[1]) : 4;
	long lines = argc > 2 ? std::atol(argv[2]) : 1000;
	const char *file = argc > 3 && std::strcmp(argv[3], "-") ? argv[3] : nullptr;
	bool fragments = argc > 4 && !std::strcmp(argv[4], "fragments");
	std::vector<spdlog::sink_ptr> sinks;

	sinks.push_back(std::make_shared<spdlog::sinks::stdout_sink_mt>());
	if (file)
		sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, true));
	auto log = std::make_shared<spdlog::logger>("tt", sinks.begin(), sinks.end());
	log->set_pattern("%Y-%m-%d %H:%M:%S.%e | %l | Device | %v");
	std::vector<std::thread> ts;
	for (int k = 0; k < threads; k++)
		ts.emplace_back([&, k] {
			for (long i = k; i < lines; i += threads) {
				if (i % 10 == 0)
					log->info("MERGE_AUDIT {{\"ev\":\"merge\",\"step\":{},\"host_pos\":[22,25,27,25,22,25,27,27],"
						  "\"dev_pos\":[23,26,28,26,23,26,28,28]}}", i);
				else if (fragments)
					log->info("decode step {} version engaged Opening user mode mesh shape device firmware "
						  "KMD GPU KV cache size LLM engine non-default args Uvicorn running "
						  "QWEN36_MERGE_BATCH_GUARD async merge: unguarded Detected", i);
				else
					log->info("decode step {} batch 8 tokens 8 elapsed 0.0123 s", i);
			}
		});
	for (auto &t : ts)
		t.join();
	return 0;
}
