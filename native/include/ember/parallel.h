#pragma once
// parallel_for: the only way kernels use threads.
//
// Note [deterministic parallelism]: [begin, end) is cut into chunks that depend on the range and
// the grain size only, never on the thread count; a kernel that combines per-chunk results in
// chunk order therefore gives bitwise identical results for any number of threads.
#include <cstdint>
#include <functional>

#include "ember/export.h"

namespace ember {

EMBER_API void set_num_threads(int n);  // ValueError if n < 1
EMBER_API int get_num_threads();
EMBER_API bool in_parallel_region();

// Calls fn(chunk_begin, chunk_end) over [begin, end), in parallel when the range holds more
// than `grain` items. Nested calls run inline. The first exception thrown by fn is rethrown.
EMBER_API void parallel_for(int64_t begin, int64_t end, int64_t grain,
                            const std::function<void(int64_t, int64_t)>& fn);

// FLOP/s of `threads` threads running independent vector multiply-adds for about `seconds`: the
// machine's peak, which the benchmarks report their kernels against.
EMBER_API double fma_peak_probe(int threads, double seconds);

// The chunk boundaries parallel_for uses (Note [deterministic parallelism]).
EMBER_API int64_t num_chunks(int64_t begin, int64_t end, int64_t grain);

}  // namespace ember
