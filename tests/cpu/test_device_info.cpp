// device_info (include/qsgemm/device.h) from many threads at once: no crash, no lock on the hot
// path, and the same answer for every caller. Without a GPU every call says present == false with
// the reason; with one, every call returns the same cached properties.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "qsgemm/device.h"

namespace {

TEST(DeviceInfo, ConcurrentCallsAgree) {
  const qsgemm::DeviceInfo first = qsgemm::device_info();
  constexpr int kThreads = 16, kCalls = 2000;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const qsgemm::DeviceInfo d = qsgemm::device_info(i % 2 == 0 ? -1 : (first.present ? first.device : 0));
        if (d.present != first.present || d.sm_count != first.sm_count || d.name != first.name ||
            (!d.present && d.error.empty()))
          ++mismatches;
      }
      (void)t;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  if (!first.present) {
    EXPECT_FALSE(first.error.empty());
    EXPECT_EQ(first.sm_count, 0);
  } else {
    EXPECT_GT(first.sm_count, 0);
  }
  // An index past the last device is an error, not a crash.
  const qsgemm::DeviceInfo far = qsgemm::device_info(1000);
  EXPECT_FALSE(far.present);
  EXPECT_FALSE(far.error.empty());
}

}  // namespace
