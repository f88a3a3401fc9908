// detail::PerDeviceOnce: the per-device one-time set-up behind the kernels' shared-memory attributes.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "per_device_once.h"

namespace {

using qsgemm::detail::PerDeviceOnce;

TEST(PerDeviceOnce, RunsOncePerDeviceAndRemembersTheStatus) {
  PerDeviceOnce once;
  int calls = 0;
  auto ok = [&] {
    ++calls;
    return cudaSuccess;
  };
  EXPECT_EQ(once.run(0, ok), cudaSuccess);
  EXPECT_EQ(once.run(0, ok), cudaSuccess);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(once.run(1, ok), cudaSuccess);
  EXPECT_EQ(calls, 2) << "a second device needs its own set-up";
  // A failure is remembered for its device and reported on every call.
  EXPECT_EQ(once.run(2, [] { return cudaErrorInvalidValue; }), cudaErrorInvalidValue);
  EXPECT_EQ(once.run(2, ok), cudaErrorInvalidValue);
  EXPECT_EQ(calls, 2);
}

TEST(PerDeviceOnce, DevicesOutsideTheTableRunEveryTime) {
  PerDeviceOnce once;
  int calls = 0;
  auto ok = [&] {
    ++calls;
    return cudaSuccess;
  };
  once.run(-1, ok);
  once.run(-1, ok);
  once.run(PerDeviceOnce::kMaxDevices, ok);
  EXPECT_EQ(calls, 3);
}

TEST(PerDeviceOnce, ConcurrentCallersRunItOnce) {
  PerDeviceOnce once;
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i)
        EXPECT_EQ(once.run(3, [&] {
          calls.fetch_add(1);
          return cudaSuccess;
        }),
                  cudaSuccess);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
