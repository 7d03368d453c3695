// Lowering of the ONNX losses onto ember's elementwise and reduction ops (see
// lowerer.h): NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (its
// LogSoftmax along axis 1, then the same).
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

// NegativeLogLikelihoodLoss(x [N, C, d1..dk], target [N, d1..dk], weight [C]):
// loss = -x[n, target, d...] * weight[target], 0 where target == ignore_index;
// the class picked by a one-hot mask (Eq of the target with the positions
// along C) under Where and a Sum over C (so an ignored or out-of-range target
// picks nothing). Reductions: none, sum, mean (the sum divided by the sum of
// the picked weights, or by the count of targets not ignored).
// SoftmaxCrossEntropyLoss: the same on LogSoftmax(x) along C, its second
// output the log-probabilities.
void Lowerer::lower_nll_loss(const Node& n) {
  require_inputs(n, 2);
  const bool sce = n.op_type == "SoftmaxCrossEntropyLoss";
  const int x = n.inputs[0], target = n.inputs[1];
  const std::optional<DType> xdt = dtype_of(x);
  if (!xdt || !is_floating(*xdt)) refuse("input " + vname(x) + " is not floating point");
  const DType dt = *xdt;
  const std::optional<DType> tdt = dtype_of(target);
  if (tdt != DType::Int64 && tdt != DType::Int32) refuse("target " + vname(target) + " is not int32 or int64");
  const std::vector<Dim> xs = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 2) refuse("input " + vname(x) + " has rank " + std::to_string(rank) + ", not at least 2 ([N, C, ...])");
  if (rank_of(target, "target") != rank - 1) {
    refuse("target " + vname(target) + " has rank " + std::to_string(rank_of(target, "target")) + ", not " +
           std::to_string(rank - 1));
  }
  const std::string reduction = n.get_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") refuse("reduction '" + reduction + "' is unknown");
  const bool has_weight = has_input(n, 2);
  if (has_weight && rank_of(n.inputs[2], "weight") != 1) refuse("weight " + vname(n.inputs[2]) + " is not 1-D");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  int32_t scores = tensor(x);
  if (sce) {
    const bool keep = n.outputs.size() > 1 && n.outputs[1] >= 0;
    scores = emit_new(OpKind::LogSoftmax, {scores}, dt, xs, SoftmaxParams{1}, base + "/log_prob",
                      keep ? tensor(n.outputs[1]) : -1);
  }
  // The target as [N, 1, d1..dk] int64; an ignored one as -1 (no class).
  std::vector<Dim> ts = xs;
  ts[1] = Dim::fixed(1);
  int32_t t = cast_new(tensor(target), DType::Int64, base + "/target");
  t = emit_new(OpKind::Unsqueeze, {t, -1}, DType::Int64, ts, dims_params({1}, "axes"), base + "/target_1");
  const bool ignores = n.has("ignore_index");
  const int32_t ignore_index =
      ignores ? new_weight(base + "/ignore_index", scalar_tensor(static_cast<double>(n.get_int("ignore_index", 0)),
                                                                 DType::Int64), false)
              : -1;
  if (ignores) {
    const int32_t ignored = binary_new(OpKind::Eq, t, ignore_index, DType::Bool, base + "/ignored");
    t = emit_new(OpKind::Where, {ignored, new_weight(base + "/no_class", scalar_tensor(-1.0, DType::Int64), false), t},
                 DType::Int64, ts, NoParams{}, base + "/target_kept");
  }
  const int32_t hot = binary_new(OpKind::Eq, t, positions(scores, 1, rank, xs[1], base + "/classes"), DType::Bool,
                                 base + "/one_hot");
  const int32_t zero = scalar_weight(base + "/zero", 0.0, dt);
  const uint32_t c_axis = 1u << 1;
  const int32_t picked = reduce_new(
      OpKind::Sum, emit_new(OpKind::Where, {hot, scores, zero}, dt, xs, NoParams{}, base + "/masked"), c_axis, false,
      base + "/picked");
  std::vector<Dim> ls = xs;
  ls.erase(ls.begin() + 1);
  const bool last = reduction == "none";
  int32_t loss = emit_new(OpKind::Neg, {picked}, dt, ls, NoParams{}, base + "/negated",
                          last && !has_weight ? out : -1);
  int32_t weights = -1;  // the weight of each target: [N, d1..dk]
  if (has_weight) {
    std::vector<int64_t> wshape(static_cast<size_t>(rank), 1);
    wshape[1] = -1;
    std::vector<Dim> wdims(static_cast<size_t>(rank), Dim::fixed(1));
    wdims[1] = xs[1];
    const int32_t w = reshape_new(cast_new(tensor(n.inputs[2]), dt, base + "/weight"), wshape, wdims,
                                  base + "/weight_c");
    weights = reduce_new(OpKind::Sum, emit_new(OpKind::Where, {hot, w, zero}, dt, xs, NoParams{}, base + "/weights_c"),
                         c_axis, false, base + "/weights");
    loss = binary_new(OpKind::Mul, loss, weights, dt, base + "/weighted", last ? out : -1);
  }
  if (last) return;
  const uint32_t all = rank - 1 >= 32 ? ~0u : (1u << (rank - 1)) - 1;
  if (reduction == "sum") return (void)reduce_new(OpKind::Sum, loss, all, false, base, out);
  if (!has_weight && !ignores) return (void)reduce_new(OpKind::Mean, loss, all, false, base, out);
  if (!has_weight) {  // the count of targets not ignored
    const int32_t kept = binary_new(OpKind::Ne, tensor(target), cast_new(ignore_index, *tdt, base + "/ii"), DType::Bool,
                                    base + "/kept");
    weights = cast_new(kept, dt, base + "/kept_count");
  }
  binary_new(OpKind::Div, reduce_new(OpKind::Sum, loss, all, false, base + "/sum"),
             reduce_new(OpKind::Sum, weights, all, false, base + "/weight_sum"), dt, base, out);
}

}  // namespace ember::converter::lowering
