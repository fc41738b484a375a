// capture_iostream.cpp - a libstdc++ host for the capture tests: 16 threads
// writing merge-audit lines to std::cout after std::ios::sync_with_stdio(false),
// so cout is libstdc++'s own filebuf (an 8 KiB buffer flushed with write(2)
// wherever it fills, mid-line, by whichever thread fills it). A mutex keeps
// each line whole in the buffer, as a logger's lock does.
//
// usage: capture_iostream THREADS LINES
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv)
{
	int threads = argc > 1 ? std::atoi(argv[1]) : 16;
	int lines = argc > 2 ? std::atoi(argv[2]) : 300;
	std::mutex mu;
	std::vector<std::thread> ts;

	std::ios::sync_with_stdio(false);
	for (int k = 0; k < threads; k++)
		ts.emplace_back([&, k] {
			for (int i = 0; i < lines; i++) {
				std::string pad((size_t)((i * 53 + k * 17) % 700), 'x');
				std::lock_guard<std::mutex> g(mu);
				std::cout << "MERGE_AUDIT {\"ev\":\"merge\",\"thread\":" << k << ",\"seq\":" << i
					  << ",\"pad\":\"" << pad << "\"}\n";
			}
		});
	for (auto &t : ts)
		t.join();
	return 0;
}
