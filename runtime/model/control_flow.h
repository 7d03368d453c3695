// Control flow in the executor: ONNX If, Loop and Scan (ops.def; params in
// op_params.h). Their subgraphs are the file's `subgraphs` (ember.fbs), each
// run by an Executor of its own on the CPU (run_subgraph, executor.h), made
// once at create. The ops run on the host: on a device executor they are
// fallback ops (their inputs come to the CPU, their outputs go back).
//
// Memory: a control-flow op's subgraph runs, and its outputs, are heap
// allocations outside the context's arena plan (what a subgraph allocates
// depends on the values: the branch taken, the trip count), so the arena
// plan of the graph around it stays the same from run to run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/model/loader.h"
#include "runtime/model/op_runner.h"
#include "runtime/model/op_state.h"

namespace ember {

// Gives every control-flow op of `m` the executors of its subgraphs (by the
// indices its params hold; `subgraphs` holds the file's subgraphs of lower
// index than m's own). Fails on an index it does not have.
Status attach_subgraphs(const Model& m, const std::vector<std::shared_ptr<const Executor>>& subgraphs,
                        std::vector<OpState>& ops, std::string* error);

// The runners (op_runner.cc's dispatch).
Status run_If(OpContext& c);
Status run_Loop(OpContext& c);
Status run_Scan(OpContext& c);

}  // namespace ember
