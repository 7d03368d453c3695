// Lowering of ONNX ops composed of ember's elementwise, reduction and matrix
// ops (see lowerer.h): Shrink, Hardmax, LpNormalization,
// MeanVarianceNormalization and Einsum, each as the ONNX specification (or its
// function body) writes it.
#include <algorithm>
#include <cmath>
#include <map>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

// Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
void Lowerer::lower_shrink(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt || *dt == DType::Bool) refuse("input " + vname(x) + " of dtype " + (dt ? std::string(dtype_name(*dt)) : std::string("unknown")) + " is not numeric");
  const double lambd = n.get_float("lambd", 0.5), bias = n.get_float("bias", 0.0);
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const std::vector<Dim> s = dims_of(x, "input");
  const int32_t low = binary_new(OpKind::Lt, in, scalar_weight(base + "/minus_lambd", -lambd, *dt), DType::Bool, base + "/low");
  const int32_t high = binary_new(OpKind::Gt, in, scalar_weight(base + "/lambd", lambd, *dt), DType::Bool, base + "/high");
  const int32_t b = scalar_weight(base + "/bias", bias, *dt);
  const int32_t up = binary_new(OpKind::Add, in, b, *dt, base + "/plus_bias");
  const int32_t down = binary_new(OpKind::Sub, in, b, *dt, base + "/minus_bias");
  const int32_t inner = emit_new(OpKind::Where, {high, down, scalar_weight(base + "/zero", 0.0, *dt)}, *dt, s, NoParams{},
                                 base + "/high_or_zero");
  emit_new(OpKind::Where, {low, up, inner}, *dt, s, NoParams{}, base, out);
}

// Hardmax: 1 where the first maximum along axis is, else 0 (ArgMax, then Eq
// with the positions along axis).
void Lowerer::lower_hardmax(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt || !is_floating(*dt)) refuse("input " + vname(x) + " is not floating point");
  const std::vector<Dim> s = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank == 0) refuse("input " + vname(x) + " is a scalar (rank 0)");
  const int64_t axis = norm_axis(n.get_int("axis", g_.opset > 0 && g_.opset < 13 ? 1 : -1), rank, "axis");
  if (g_.opset > 0 && g_.opset < 13 && axis != rank - 1) {
    refuse("axis " + std::to_string(axis) + " below opset 13 (the 2-D coercion) is not supported, only the last axis");
  }
  const Dim& size = s[static_cast<size_t>(axis)];
  if (!size.is_static()) refuse("the size of axis " + std::to_string(axis) + " of input " + vname(x) + " is dynamic");
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  ReduceParams p;
  p.dims = uint32_t{1} << axis;
  p.keepdim = true;
  const int32_t arg = emit_new(OpKind::ArgMax, {in}, DType::Int64, reduced_shape(s, p, true), p, base + "/argmax");
  std::vector<int64_t> pos_shape(static_cast<size_t>(rank), 1);
  pos_shape[static_cast<size_t>(axis)] = size.value;
  const Tensor pos = arange(static_cast<double>(size.value), TensorOptions(DType::Int64)).reshape(pos_shape);
  const int32_t hit = binary_new(OpKind::Eq, new_weight(base + "/positions", pos, false), arg, DType::Bool, base + "/hit");
  cast_new(hit, *dt, base, out);
}

// LpNormalization: x / ||x||_p along axis (p 1: Sum of Abs; 2: Norm), 0 where the norm is 0.
void Lowerer::lower_lp_normalization(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt || !is_floating(*dt)) refuse("input " + vname(x) + " is not floating point");
  const int64_t p_norm = n.get_int("p", 2);
  if (p_norm != 1 && p_norm != 2) refuse("p = " + std::to_string(p_norm) + " is not supported (1 or 2)");
  const std::vector<Dim> s = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank == 0) refuse("input " + vname(x) + " is a scalar (rank 0)");
  ReduceParams p;
  p.dims = uint32_t{1} << norm_axis(n.get_int("axis", -1), rank, "axis");
  p.keepdim = true;
  const std::vector<Dim> kept = reduced_shape(s, p, true);
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  int32_t norm = -1;
  if (p_norm == 1) {
    const int32_t a = emit_new(OpKind::Abs, {in}, *dt, s, NoParams{}, base + "/abs");
    norm = emit_new(OpKind::Sum, {a}, *dt, kept, p, base + "/norm");
  } else {
    p.p = 2.0;
    norm = emit_new(OpKind::Norm, {in}, *dt, kept, p, base + "/norm");
  }
  const int32_t zero = scalar_weight(base + "/zero", 0.0, *dt);
  const int32_t is_zero = binary_new(OpKind::Eq, norm, zero, DType::Bool, base + "/norm_is_zero");
  const int32_t q = binary_new(OpKind::Div, in, norm, *dt, base + "/divided");
  emit_new(OpKind::Where, {is_zero, zero, q}, *dt, s, NoParams{}, base, out);
}

// MeanVarianceNormalization as its ONNX function: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
void Lowerer::lower_mean_variance_normalization(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt || !is_floating(*dt)) refuse("input " + vname(x) + " is not floating point");
  const std::vector<Dim> s = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(s.size());
  ReduceParams p;
  p.keepdim = true;
  for (int64_t a : n.get_ints("axes", {0, 2, 3})) p.dims |= uint32_t{1} << norm_axis(a, rank, "axis");
  const std::vector<Dim> kept = reduced_shape(s, p, true);
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t mean = emit_new(OpKind::Mean, {in}, *dt, kept, p, base + "/mean");
  const int32_t sq = binary_new(OpKind::Mul, in, in, *dt, base + "/squared");
  const int32_t mean_sq = emit_new(OpKind::Mean, {sq}, *dt, kept, p, base + "/mean_of_squares");
  const int32_t var = binary_new(OpKind::Sub, mean_sq, binary_new(OpKind::Mul, mean, mean, *dt, base + "/mean_squared"),
                                 *dt, base + "/variance");
  const int32_t std_eps = binary_new(OpKind::Add, emit_new(OpKind::Sqrt, {var}, *dt, kept, NoParams{}, base + "/std"),
                                     scalar_weight(base + "/epsilon", 1e-9, *dt), *dt, base + "/std_eps");
  binary_new(OpKind::Div, binary_new(OpKind::Sub, in, mean, *dt, base + "/centered"), std_eps, *dt, base, out);
}

namespace {

// One Einsum operand's labels: letters as themselves, the dims of "..." as
// -1, -2, ... counted from its last dim (so that they align from the right).
std::vector<int> einsum_labels(const std::string& term, int64_t rank, const std::string& what) {
  std::vector<int> labels;
  const size_t dots = term.find("...");
  const std::string before = dots == std::string::npos ? term : term.substr(0, dots);
  const std::string after = dots == std::string::npos ? "" : term.substr(dots + 3);
  for (char c : before + after) {
    if (!std::isalpha(static_cast<unsigned char>(c))) refuse(what + " '" + term + "' has the character '" + c + "'");
  }
  const int64_t explicit_dims = static_cast<int64_t>(before.size() + after.size());
  const int64_t ellipsis = rank < 0 ? 0 : rank - explicit_dims;
  if (rank >= 0 && (ellipsis < 0 || (dots == std::string::npos && ellipsis != 0))) {
    refuse(what + " '" + term + "' does not match its rank " + std::to_string(rank));
  }
  for (char c : before) labels.push_back(c);
  for (int64_t e = ellipsis; e >= 1; --e) labels.push_back(-static_cast<int>(e));
  for (char c : after) labels.push_back(c);
  return labels;
}

}  // namespace

// Einsum of one or two operands: a label repeated in an operand takes the
// diagonal (a Mul by an identity matrix, a Sum); labels only one operand has
// and the output lacks are summed; then a Permute (one operand) or a batched
// MatMul of the operands permuted to
// [batch, kept, contracted] x [batch, contracted, kept] and reshaped (two).
void Lowerer::lower_einsum(const Node& n) {
  std::string eq;
  for (char c : n.get_string("equation", "")) {
    if (c != ' ') eq += c;
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != n.inputs.size()) {
    refuse("equation '" + eq + "' has " + std::to_string(terms.size()) + " operands, the node " +
           std::to_string(n.inputs.size()) + " inputs");
  }
  if (terms.size() > 2) refuse("equation '" + eq + "': more than 2 operands are not supported");
  require_inputs(n, terms.size());  // an omitted operand ("")
  const std::optional<DType> dt = dtype_of(n.inputs[0]);
  if (!dt) refuse("input " + vname(n.inputs[0]) + " has an unknown dtype");
  std::vector<std::vector<int>> labels;
  std::map<int, Dim> size;  // label -> its size
  for (size_t k = 0; k < terms.size(); ++k) {
    const int id = n.inputs[k];
    const std::vector<Dim> d = dims_of(id, "input");
    labels.push_back(einsum_labels(terms[k], static_cast<int64_t>(d.size()), "operand"));
    for (size_t i = 0; i < d.size(); ++i) {
      const int l = labels[k][i];
      if (size.count(l) && !(size[l] == d[i])) {
        refuse("equation '" + eq + "': a label has sizes that differ between the operands (broadcasting is not supported)");
      }
      size[l] = d[i];
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    int64_t ellipsis = 0;
    for (const auto& ls : labels) ellipsis = std::max<int64_t>(ellipsis, std::count_if(ls.begin(), ls.end(), [](int l) { return l < 0; }));
    const std::string rhs = eq.substr(arrow + 2);
    const size_t dots = rhs.find("...");
    out_labels = einsum_labels(rhs, static_cast<int64_t>(rhs.size()) - (dots == std::string::npos ? 0 : 3) + ellipsis,
                               "output");
  } else {  // implicit: the ellipsis dims, then the labels used once, in alphabetical order (the map's)
    for (const auto& [l, d] : size) {
      int uses = 0;
      for (const auto& ls : labels) uses += static_cast<int>(std::count(ls.begin(), ls.end(), l));
      if (l < 0 || uses == 1) out_labels.push_back(l);
    }
  }
  for (int l : out_labels) {
    if (!size.count(l)) refuse("equation '" + eq + "': an output label is in no operand");
  }
  lower_einsum_terms(n, labels, out_labels, size, *dt);
}

void Lowerer::lower_einsum_terms(const Node& n, std::vector<std::vector<int>> labels, const std::vector<int>& out,
                                 const std::map<int, Dim>& size, DType dt) {
  const int32_t y = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(y)].name;
  auto has = [](const std::vector<int>& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); };
  auto dims = [&](const std::vector<int>& ls) {
    std::vector<Dim> d;
    for (int l : ls) d.push_back(size.at(l));
    return d;
  };
  // Permutes operand tensor `t` of labels `from` to `to` (into `into`, a Copy if nothing moves).
  auto permute = [&](int32_t t, const std::vector<int>& from, const std::vector<int>& to, const std::string& what,
                     int32_t into) {
    if (from == to) return into < 0 ? t : cast_new(t, dt, base + "/" + what, into);
    std::vector<int64_t> perm;
    for (int l : to) perm.push_back(std::find(from.begin(), from.end(), l) - from.begin());
    return emit_new(OpKind::Permute, {t}, dt, dims(to), dims_params(perm, "perm"), base + "/" + what, into);
  };
  const size_t m = labels.size();
  std::vector<int32_t> t;
  for (size_t k = 0; k < m; ++k) t.push_back(tensor(n.inputs[k]));
  for (size_t k = 0; k < m; ++k) {  // a label twice in an operand: its diagonal (x * eye, summed over one)
    for (size_t i = 0; i < labels[k].size(); ++i) {
      for (size_t j = i + 1; j < labels[k].size(); ++j) {
        if (labels[k][j] != labels[k][i]) continue;
        const Dim d = size.at(labels[k][i]);
        if (!d.is_static()) refuse("the diagonal of a dynamic dim is not supported");
        std::vector<int64_t> eye_shape(labels[k].size(), 1);
        eye_shape[i] = eye_shape[j] = d.value;
        const Tensor mask = eye(d.value, std::nullopt, TensorOptions(dt)).reshape(eye_shape);
        const std::string what = base + "/diagonal" + std::to_string(k) + "_" + std::to_string(j);
        const int32_t masked = binary_new(OpKind::Mul, t[k], new_weight(what + "_eye", mask, false), dt, what + "_masked");
        ReduceParams p;
        p.keepdim = false;
        p.dims = uint32_t{1} << j;
        labels[k].erase(labels[k].begin() + static_cast<std::ptrdiff_t>(j));
        t[k] = emit_new(OpKind::Sum, {masked}, dt, dims(labels[k]), p, what);
        j = i;  // look again from i + 1: the positions moved
      }
    }
  }
  for (size_t k = 0; k < m; ++k) {  // sum the labels no other operand and not the output has
    ReduceParams p;
    p.keepdim = false;
    std::vector<int> kept;
    for (size_t i = 0; i < labels[k].size(); ++i) {
      const int l = labels[k][i];
      if (!has(out, l) && !(m == 2 && has(labels[1 - k], l))) p.dims |= uint32_t{1} << i;
      else kept.push_back(l);
    }
    if (p.dims == 0) continue;
    const bool last = m == 1 && kept == out;
    t[k] = emit_new(OpKind::Sum, {t[k]}, dt, dims(kept), p, base + "/sum" + std::to_string(k), last ? y : -1);
    labels[k] = kept;
    if (last) return;
  }
  if (m == 1) {
    permute(t[0], labels[0], out, "permuted", y);
    return;
  }
  std::vector<int> batch, left, contracted, right;
  for (int l : out) {
    if (has(labels[0], l) && has(labels[1], l)) batch.push_back(l);
    else if (has(labels[0], l)) left.push_back(l);
    else right.push_back(l);
  }
  for (int l : labels[0]) {
    if (has(labels[1], l) && !has(out, l)) contracted.push_back(l);
  }
  auto numel = [&](const std::vector<int>& ls) {
    int64_t v = 1;
    for (int l : ls) {
      if (!size.at(l).is_static()) refuse("Einsum of two operands needs static shapes");
      v *= size.at(l).value;
    }
    return v;
  };
  auto cat = [](std::vector<int> a, const std::vector<int>& b, const std::vector<int>& c) {
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    return a;
  };
  const int64_t nb = numel(batch), nl = numel(left), nk = numel(contracted), nr = numel(right);
  auto as3 = [&](int32_t v, const std::vector<int64_t>& s, const std::string& what) {
    const std::vector<Dim> d = {Dim::fixed(s[0]), Dim::fixed(s[1]), Dim::fixed(s[2])};
    return emit_new(OpKind::Reshape, {v, ints_weight(base + "/" + what + "_shape", s)}, dt, d, NoParams{},
                    base + "/" + what);
  };
  const int32_t a = as3(permute(t[0], labels[0], cat(batch, left, contracted), "a_permuted", -1), {nb, nl, nk}, "a3");
  const int32_t b = as3(permute(t[1], labels[1], cat(batch, contracted, right), "b_permuted", -1), {nb, nk, nr}, "b3");
  const std::vector<int> result = cat(batch, left, right);
  const int32_t c = emit_new(OpKind::MatMul, {a, b}, dt, {Dim::fixed(nb), Dim::fixed(nl), Dim::fixed(nr)}, NoParams{},
                             base + "/matmul");
  std::vector<int64_t> shape;
  for (int l : result) shape.push_back(size.at(l).value);
  const bool last = result == out;
  const int32_t r = emit_new(OpKind::Reshape, {c, ints_weight(base + "/result_shape", shape)}, dt, dims(result),
                             NoParams{}, base + "/result", last ? y : -1);
  if (!last) permute(r, result, out, "permuted", y);
}

}  // namespace ember::converter::lowering
