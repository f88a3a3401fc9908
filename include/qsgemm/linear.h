// qsgemm/linear.h — what every GEMM family's linear layer shares: the options base and the plan.
//
// Every family follows one contract: a problem (shape, options, the device's SM count) gives a
// LinearPlan — the configuration, the K split and the workspace it needs — and the family's
// *_linear runs exactly that plan when it is given a workspace of at least plan.workspace_bytes.
// With a smaller workspace, or none, *_linear runs the plan for "no workspace" (no stream-K, no
// split chosen by the library); a forced split or stream-K configuration without enough workspace
// is kInvalidArgument naming the sizes. *_plan, *_linear_workspace_bytes and *_linear apply the same
// rules and throw the same errors for the same bad options.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qsgemm {

// The options every family's *_linear takes (Sparse24Options, BlockwiseOptions derive from it).
struct LinearOptions {
  // -1: the heuristic chooses; otherwise an index into the family's config table
  // (*_config_index(name) gives the index of a configuration by name).
  int config = -1;
  // 0: the library splits K where it measured faster (given the workspace); 1: never; 2..16: forced.
  int split_k = 0;
  // Optional device workspace (16-byte aligned) of workspace_bytes bytes; *_linear_workspace_bytes
  // says how much the plan needs. Do not share one between calls that may run concurrently.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// What *_linear runs for a problem given a workspace of at least workspace_bytes bytes.
struct LinearPlan {
  int config = -1;             // the configuration index
  int split_k = 1;             // K slices (1: no split)
  size_t workspace_bytes = 0;  // what the plan needs (0: none)
  // A second launch on the last tail_rows tokens, [M - tail_rows, M), with configuration
  // tail_config, after `config` on the first M - (M mod its token column) tokens (2:4 sparse only,
  // where the cost model prefers it to one launch with a partial token column:
  // docs/performance.md). -1: none.
  int tail_config = -1;
  int64_t tail_rows = 0;
};

}  // namespace qsgemm
