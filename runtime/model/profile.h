// Per-op profiling of a run (RunOptions::profile): one OpProfile per op, in
// op order, read back through ExecutionContext::profile().
#pragma once

#include <chrono>
#include <vector>

#include "runtime/model/executor.h"
#include "runtime/model/placement.h"

namespace ember {

// Times one op: begin() records what it is and reads (before it runs),
// end() its time.
class OpTimer {
 public:
  // `on_cpu`: the executor runs on the CPU; `device`: the executor's device.
  void begin(const Model& m, int k, bool on_cpu, Placement place, DeviceType device,
             const std::vector<Tensor>& values);
  // The op's entry, with its time since begin().
  OpProfile end();

 private:
  OpProfile entry_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ember
