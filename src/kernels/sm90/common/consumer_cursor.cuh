// The consumer side of a CUTLASS sm90 mainloop pipeline, for the mma() loops we write ourselves
// (the two-partials mainloops: sm90_blockwise_two_partials.cuh, sm90_sparse24_two_partials.cuh).
// It waits for the stages in order and releases them in order, each from its own copy of the
// pipeline state, as CUTLASS's mainloops do with smem_pipe_read and smem_pipe_release.
#pragma once

#include "cutlass/cutlass.h"

namespace qsgemm::kernels {

template <class Pipeline, class PipelineState>
struct ConsumerCursor {
  Pipeline& pipeline;
  PipelineState read;     // the next stage to wait for
  PipelineState release;  // the next stage to release

  CUTLASS_DEVICE ConsumerCursor(Pipeline& p, PipelineState start) : pipeline(p), read(start), release(start) {}

  // Waits until the next stage's data is in shared memory and returns its index (does not advance).
  CUTLASS_DEVICE int wait() {
    auto token = pipeline.consumer_try_wait(read);
    pipeline.consumer_wait(read, token);
    return read.index();
  }
  CUTLASS_DEVICE void advance() { ++read; }
  // Hands the oldest stage not yet released back to the producer.
  CUTLASS_DEVICE void release_one() {
    pipeline.consumer_release(release);
    ++release;
  }
};

}  // namespace qsgemm::kernels
