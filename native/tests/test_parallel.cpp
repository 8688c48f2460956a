#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ember/error.h"
#include "ember/parallel.h"
#include "harness.h"

using namespace ember;

// Note [pool job lifetime]: back-to-back jobs of different sizes, with more threads than cores so
// that workers are preempted mid-job. Every chunk must run exactly once, and all of them must have
// finished when parallel_for returns.
EMBER_TEST(every_chunk_runs_once_and_is_done_on_return) {
  set_num_threads(4);
  constexpr int kMaxChunks = 17;
  std::atomic<int> runs[kMaxChunks];
  int bad_counts = 0, unfinished = 0;
  for (int job = 0; job < 20000; ++job) {
    const int chunks = job % 2 == 0 ? 2 : kMaxChunks;
    for (auto& r : runs) r.store(0);
    std::atomic<int> in_flight{0};
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      in_flight.fetch_add(1);
      for (int64_t c = b; c < e; ++c) runs[c].fetch_add(1);
      if (job % 7 == 0) std::this_thread::yield();
      in_flight.fetch_sub(1);
    });
    if (in_flight.load() != 0) ++unfinished;
    for (int c = 0; c < chunks; ++c) bad_counts += runs[c].load() != 1;
  }
  CHECK_EQ(bad_counts, 0);
  CHECK_EQ(unfinished, 0);
}

// Note [pool spinning]: jobs that find the workers asleep (issued after more than the spin
// window) and jobs whose last chunk outlasts the caller's spin window (so the caller sleeps until
// it is done) must behave as back-to-back ones do.
EMBER_TEST(sleeping_workers_and_slow_chunks_finish_every_chunk) {
  set_num_threads(2);
  int bad = 0;
  for (int job = 0; job < 40; ++job) {
    if (job % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::atomic<int> runs{0}, in_flight{0};
    parallel_for(0, 4, 1, [&](int64_t b, int64_t) {
      in_flight.fetch_add(1);
      if (b == 3 && job % 4 < 2) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      runs.fetch_add(1);
      in_flight.fetch_sub(1);
    });
    bad += runs.load() != 4 || in_flight.load() != 0;
  }
  CHECK_EQ(bad, 0);
}

EMBER_TEST(the_first_exception_is_rethrown_and_the_pool_stays_usable) {
  set_num_threads(3);
  CHECK_THROWS(std::runtime_error,
               parallel_for(0, 64, 1,
                            [](int64_t b, int64_t) {
                              if (b == 40) throw std::runtime_error("chunk 40 failed");
                            }),
               "chunk 40 failed");
  std::atomic<int64_t> sum{0};
  parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
  });
  CHECK_EQ(sum.load(), 999 * 1000 / 2);
}

EMBER_TEST(set_num_threads_rejects_zero) {
  CHECK_THROWS(ValueError, set_num_threads(0), "positive number of threads");
}
