// The CUDA allocator (src/backend/cuda/device_allocator.cu), in builds with EMBER_USE_CUDA: a cuda
// tensor's storage is device memory from cudaMalloc that holds what is copied in and is given
// back when the tensor goes, and a refused allocation raises. On a machine without a CUDA device
// the program exits with 77, which ctest reports as skipped.
#include <cuda_runtime.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "ember/error.h"
#include "ember/tensor.h"
#include "harness.h"

using namespace ember;

namespace {
const bool g_device_present = [] {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::cout << "no CUDA device: skipped\n";
    std::exit(77);
  }
  return true;
}();

size_t free_bytes() {
  size_t free = 0, total = 0;
  CHECK_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  return free;
}
}  // namespace

EMBER_TEST(cuda_storage_is_device_memory_that_round_trips) {
  Tensor t = empty({1000}, DType::Float32, Device(DeviceType::CUDA, 0));
  CHECK(t.device().type == DeviceType::CUDA);
  cudaPointerAttributes attr{};
  CHECK_EQ(cudaPointerGetAttributes(&attr, t.data_ptr()), cudaSuccess);
  CHECK(attr.type == cudaMemoryTypeDevice);
  std::vector<float> host(1000), back(1000, -1.0f);
  for (int i = 0; i < 1000; ++i) host[i] = 0.5f * static_cast<float>(i) - 7.0f;
  CHECK_EQ(cudaMemcpy(t.data_ptr(), host.data(), 4000, cudaMemcpyHostToDevice), cudaSuccess);
  CHECK_EQ(cudaMemcpy(back.data(), t.data_ptr(), 4000, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(back == host);
}

EMBER_TEST(storage_is_freed_with_its_tensor) {
  const size_t before = free_bytes();
  {
    Tensor big = empty({int64_t(64) << 20}, DType::Float32, Device(DeviceType::CUDA, 0));  // 256 MiB
    CHECK(free_bytes() + (size_t(200) << 20) <= before);
  }
  CHECK(free_bytes() + (size_t(50) << 20) >= before);
  CHECK_EQ(empty({0, 3}, DType::Float32, Device(DeviceType::CUDA, 0)).numel(), 0);
}

EMBER_TEST(a_refused_allocation_raises) {
  CHECK_THROWS(Error, empty({int64_t(1) << 50}, DType::Float32, Device(DeviceType::CUDA, 0)),
               "bytes on cuda, but got");
}
