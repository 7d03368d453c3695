// Lowering of the ONNX normalizations ember has no op for (see lowerer.h):
// InstanceNormalization, GroupNormalization, BatchNormalization in training
// mode (batch statistics and the running ones) and LRN, onto Mean, Var
// (population), Rsqrt and elementwise ops; LRN's sum over a channel window
// by an AvgPool2d over [N, 1, C, rest].
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

// (t - mean) / sqrt(var + eps) over the dims of `dims`, the statistics kept
// (their tensors in *mean and *var when asked for).
int32_t Lowerer::standardize(int32_t t, uint32_t dims, double eps, const std::string& name, int32_t* mean_out,
                             int32_t* var_out) {
  const DType dt = def_.tensors[static_cast<size_t>(t)].dtype;
  ReduceParams p;
  p.dims = dims;
  p.keepdim = true;
  p.correction = 0;
  const std::vector<Dim> kept = reduced_shape(tensor_dims(t), p, true);
  const int32_t mean = emit_new(OpKind::Mean, {t}, dt, kept, p, name + "/mean");
  const int32_t var = emit_new(OpKind::Var, {t}, dt, kept, p, name + "/var");
  const int32_t shifted = binary_new(OpKind::Add, var, scalar_weight(name + "/epsilon", eps, dt), dt, name + "/var_eps");
  const int32_t inv = emit_new(OpKind::Rsqrt, {shifted}, dt, kept, NoParams{}, name + "/inv_std");
  if (mean_out) *mean_out = mean;
  if (var_out) *var_out = var;
  return binary_new(OpKind::Mul, binary_new(OpKind::Sub, t, mean, dt, name + "/centered"), inv, dt, name + "/normalized");
}

// Per-channel parameter `id` ([C]) shaped [C, 1, ..] to broadcast against a
// rank-`rank` tensor whose dim 1 it scales (a constant reshaped here, else a Reshape).
int32_t Lowerer::channel_param(int id, int64_t rank, DType dt, const std::string& name) {
  std::vector<int64_t> shape(static_cast<size_t>(rank - 1), 1);
  shape[0] = -1;
  if (is_const(id)) return new_weight(name, val(id).constant.to(dt).reshape(shape), true);
  std::vector<Dim> dims(static_cast<size_t>(rank - 1), Dim::fixed(1));
  dims[0] = dims_of(id, name)[0];
  return reshape_new(cast_new(tensor(id), dt, name + "/cast"), shape, dims, name);
}

namespace {

void require_floating(const std::optional<DType>& dt, const std::string& what) {
  if (!dt || !is_floating(*dt)) refuse(what + " is not floating point");
}

}  // namespace

// InstanceNormalization: per sample and channel over the spatial dims, then scale and B per channel.
void Lowerer::lower_instance_normalization(const Node& n) {
  require_inputs(n, 3);
  const int x = n.inputs[0];
  require_floating(dtype_of(x), "input " + vname(x));
  const DType dt = *dtype_of(x);
  const int64_t rank = rank_of(x, "input");
  if (rank < 3) refuse("input " + vname(x) + " has rank " + std::to_string(rank) + ", not at least 3");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const uint32_t spatial = ((1u << rank) - 1) & ~3u;
  const int32_t z = standardize(tensor(x), spatial, n.get_float("epsilon", 1e-5), base);
  const int32_t scaled = binary_new(OpKind::Mul, z, channel_param(n.inputs[1], rank, dt, base + "/scale"), dt,
                                    base + "/scaled");
  binary_new(OpKind::Add, scaled, channel_param(n.inputs[2], rank, dt, base + "/bias"), dt, base, out);
}

// GroupNormalization: x viewed as [N, G, rest] standardized over rest, then
// scale and bias per channel (opset 21) or per group (18, in the grouped view).
void Lowerer::lower_group_normalization(const Node& n) {
  require_inputs(n, 3);
  const int x = n.inputs[0];
  require_floating(dtype_of(x), "input " + vname(x));
  const DType dt = *dtype_of(x);
  const std::vector<Dim> xs = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(xs.size()), groups = n.get_int("num_groups", 0);
  if (rank < 3) refuse("input " + vname(x) + " has rank " + std::to_string(rank) + ", not at least 3");
  if (groups < 1) refuse("num_groups " + std::to_string(groups) + " is not positive");
  if (xs[1].is_static() && xs[1].value % groups != 0) {
    refuse("the channels (" + std::to_string(xs[1].value) + ") are not divisible by num_groups " + std::to_string(groups));
  }
  const bool per_group = g_.opset > 0 && g_.opset < 21;
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t grouped = reshape_new(in, {0, groups, -1}, {xs[0], Dim::fixed(groups), Dim{}}, base + "/grouped");
  int32_t z = standardize(grouped, 1u << 2, n.get_float("epsilon", 1e-5), base);
  if (per_group) {
    z = binary_new(OpKind::Mul, z, channel_param(n.inputs[1], 3, dt, base + "/scale"), dt, base + "/scaled");
    z = binary_new(OpKind::Add, z, channel_param(n.inputs[2], 3, dt, base + "/bias"), dt, base + "/biased");
  }
  int32_t shape = -1;
  if (const auto st = val(x).static_shape()) {
    shape = ints_weight(base + "/shape", *st);
  } else {
    shape = emit_new(OpKind::ShapeOf, {in}, DType::Int64, {Dim::fixed(rank)}, NoParams{}, base + "/shape");
  }
  if (per_group) return (void)emit_new(OpKind::Reshape, {z, shape}, dt, xs, NoParams{}, base, out);
  const int32_t back = emit_new(OpKind::Reshape, {z, shape}, dt, xs, NoParams{}, base + "/normalized_x");
  const int32_t scaled = binary_new(OpKind::Mul, back, channel_param(n.inputs[1], rank, dt, base + "/scale"), dt,
                                    base + "/scaled");
  binary_new(OpKind::Add, scaled, channel_param(n.inputs[2], rank, dt, base + "/bias"), dt, base, out);
}

// BatchNormalization with training_mode = 1: normalized by the batch's mean
// and (population) variance over every dim but 1; outputs 1 and 2 the
// running statistics, input * momentum + batch * (1 - momentum).
void Lowerer::lower_batch_norm_training(const Node& n) {
  require_inputs(n, 5);
  const int x = n.inputs[0];
  require_floating(dtype_of(x), "input " + vname(x));
  const DType dt = *dtype_of(x);
  const int64_t rank = rank_of(x, "input");
  if (rank < 2) refuse("input " + vname(x) + " has rank " + std::to_string(rank) + ", not at least 2");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const uint32_t dims = ((1u << rank) - 1) & ~2u;
  int32_t mean = -1, var = -1;
  const int32_t z = standardize(tensor(x), dims, n.get_float("epsilon", 1e-5), base, &mean, &var);
  const int32_t scaled = binary_new(OpKind::Mul, z, channel_param(n.inputs[1], rank, dt, base + "/scale"), dt,
                                    base + "/scaled");
  binary_new(OpKind::Add, scaled, channel_param(n.inputs[2], rank, dt, base + "/bias"), dt, base, out);
  const double momentum = n.get_float("momentum", 0.9);
  for (size_t k = 1; k < 3 && k < n.outputs.size(); ++k) {
    const int o = n.outputs[k];
    if (o < 0) continue;
    const int32_t running = tensor(o);
    const std::string nm = def_.tensors[static_cast<size_t>(running)].name;
    const int32_t batch = reshape_new(k == 1 ? mean : var, {-1}, {Dim{}}, nm + "/batch");
    const int32_t kept = binary_new(OpKind::Mul, cast_new(tensor(n.inputs[2 + k]), dt, nm + "/input"),
                                    scalar_weight(nm + "/momentum", momentum, dt), dt, nm + "/kept");
    const int32_t added = binary_new(OpKind::Mul, batch, scalar_weight(nm + "/rest", 1.0 - momentum, dt), dt,
                                     nm + "/added");
    binary_new(OpKind::Add, kept, added, dt, nm, running);
  }
}

// LRN: x / (bias + alpha / size * sum of x^2 over the channels
// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)])^beta; the sum an
// AvgPool2d (kernel [size, 1], the channels padded with zeros) times size.
void Lowerer::lower_lrn(const Node& n) {
  const int x = n.inputs[0];
  require_floating(dtype_of(x), "input " + vname(x));
  const DType dt = *dtype_of(x);
  const std::vector<Dim> xs = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(xs.size()), size = n.get_int("size", 0);
  if (rank < 3) refuse("input " + vname(x) + " has rank " + std::to_string(rank) + ", not at least 3");
  if (size < 1) refuse("size " + std::to_string(size) + " is not positive");
  if (!xs[1].is_static()) refuse("input " + vname(x) + " needs a static channel count");
  const int64_t c = xs[1].value;
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t sq = binary_new(OpKind::Mul, in, in, dt, base + "/squared");
  const int32_t planes = reshape_new(sq, {0, 1, c, -1}, {xs[0], Dim::fixed(1), xs[1], Dim{}}, base + "/planes");
  PadParams pad;
  pad.before[2] = (size - 1) / 2;
  pad.after[2] = size - 1 - pad.before[2];
  const int32_t padded = emit_new(OpKind::Pad, {planes}, dt, {xs[0], Dim::fixed(1), Dim::fixed(c + size - 1), Dim{}},
                                  pad, base + "/padded");
  const int64_t k[2] = {size, 1}, s[2] = {1, 1}, d[2] = {1, 1};
  const int32_t mean = pool_step(padded, false, k, s, d, base + "/window_mean");
  int32_t shape = -1;
  if (const auto st = val(x).static_shape()) shape = ints_weight(base + "/shape", *st);
  else shape = emit_new(OpKind::ShapeOf, {in}, DType::Int64, {Dim::fixed(rank)}, NoParams{}, base + "/shape");
  const int32_t sum = emit_new(OpKind::Reshape, {mean, shape}, dt, xs, NoParams{}, base + "/window_mean_x");
  // bias + alpha / size * (mean * size) = bias + alpha * mean.
  const int32_t scaled = binary_new(OpKind::Mul, sum, scalar_weight(base + "/alpha", n.get_float("alpha", 1e-4), dt), dt,
                                    base + "/scaled");
  const int32_t biased = binary_new(OpKind::Add, scaled, scalar_weight(base + "/bias", n.get_float("bias", 1.0), dt), dt,
                                    base + "/biased");
  const int32_t denom = binary_new(OpKind::Pow, biased, scalar_weight(base + "/beta", n.get_float("beta", 0.75), dt), dt,
                                   base + "/denominator");
  binary_new(OpKind::Div, in, denom, dt, base, out);
}

}  // namespace ember::converter::lowering
