// OpKind: generated from ops.def.
#pragma once

#include <cstdint>
#include <string_view>

namespace ember {

enum class OpKind : uint16_t {
#define RT_OP(Name, name, n_in, n_out, Params) Name,
#include "runtime/graph/ops.def"
#undef RT_OP
};

constexpr int kNumOps = 0
#define RT_OP(Name, name, n_in, n_out, Params) +1
#include "runtime/graph/ops.def"
#undef RT_OP
    ;

constexpr std::string_view op_name(OpKind op) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    return #name;
#include "runtime/graph/ops.def"
#undef RT_OP
  }
  return "unknown";
}

constexpr int op_num_inputs(OpKind op) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    return n_in;
#include "runtime/graph/ops.def"
#undef RT_OP
  }
  return 0;
}

// The inputs a model file must give an op: op_num_inputs, less the optional
// inputs appended to an op after files were written without them (the
// reductions' and Squeeze's/Unsqueeze's run-time axes, Conv2d's residual,
// which the run-time QConv2d made of an int8 Conv2d keeps): older files omit them.
constexpr int op_min_inputs(OpKind op) {
  const bool appended_axes = op == OpKind::Sum || op == OpKind::Mean || op == OpKind::Prod || op == OpKind::Var ||
                             op == OpKind::Norm || op == OpKind::Max || op == OpKind::Min ||
                             op == OpKind::Squeeze || op == OpKind::Unsqueeze;
  if (op == OpKind::Conv2d || op == OpKind::QConv2d) return 3;
  return appended_axes ? 1 : op_num_inputs(op);
}

constexpr int op_num_outputs(OpKind op) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    return n_out;
#include "runtime/graph/ops.def"
#undef RT_OP
  }
  return 0;
}

// The run-time ops of ops.def: the executor makes them at create, model files
// never hold them.
constexpr bool is_run_time_op(OpKind op) {
  return op == OpKind::QLinear || op == OpKind::QConv2d || op == OpKind::SparseLinear || op == OpKind::Conv2dPair ||
         op == OpKind::AddLayerNorm;
}

}  // namespace ember
