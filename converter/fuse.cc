// Graph rewrites after folding (passes.h): BatchNorm folded into Conv/Gemm,
// residual Adds and Relu/Clip/HardSwish fused into Conv/Gemm, MatMul biases
// and attention scales folded into Gemms, 1-D Convs made 2-D.
#include <algorithm>
#include <cmath>

#include "converter/onnx_import.h"
#include "converter/pass_util.h"
#include "converter/passes.h"
#include "runtime/ops/ops.h"

namespace ember::converter {

namespace {

// A folded constant in place of `old`: the old value itself, updated, when
// `reader` is its only reader (its ONNX name survives, so `ember finetune
// --train 'conv1.*'` still finds a Conv's weight with a BatchNorm folded
// into it); else a new constant named `name`.
int replace_constant(Graph& graph, int old, int reader, const std::string& name, const Tensor& t) {
  if (sole_user(graph, old) == reader) {
    graph.values[static_cast<size_t>(old)].constant = t.contiguous();
    return old;
  }
  return graph.add_constant(graph.find_value(name) < 0 ? name : name + "/folded", t.contiguous());
}

}  // namespace

Expected<int> fold_batchnorm(Graph& graph) {
  int folded = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& bn = graph.nodes[i];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() < 5) continue;
    if (bn.outputs.size() > 1 && std::any_of(bn.outputs.begin() + 1, bn.outputs.end(), [](int o) { return o >= 0; })) {
      continue;  // training-mode outputs are read
    }
    bool params_constant = true;
    for (size_t k = 1; k < 5; ++k) params_constant = params_constant && graph.is_constant(bn.inputs[k]);
    if (!params_constant) continue;
    const int p = graph.producer_of(bn.inputs[0]);
    if (p < 0 || dead[static_cast<size_t>(p)] || sole_user(graph, bn.inputs[0]) != static_cast<int>(i)) continue;
    Node& prod = graph.nodes[static_cast<size_t>(p)];
    const bool is_conv = prod.op_type == "Conv";
    if (!(is_conv || prod.op_type == "Gemm") || prod.has("activation") || prod.inputs.size() < 2) continue;
    if (!graph.is_constant(prod.inputs[1])) continue;
    const bool has_bias = prod.inputs.size() > 2 && prod.inputs[2] >= 0;
    if (has_bias && !graph.is_constant(prod.inputs[2])) continue;
    const Tensor w = graph.value(prod.inputs[1]).constant;
    if (!is_floating(w.dtype())) continue;
    try {
      const Tensor scale = graph.value(bn.inputs[1]).constant, beta = graph.value(bn.inputs[2]).constant;
      const Tensor mean = graph.value(bn.inputs[3]).constant, var = graph.value(bn.inputs[4]).constant;
      const Tensor s = div(scale, sqrt(add(var, bn.get_float("epsilon", 1e-5))));
      const int64_t channels = s.numel();
      Tensor new_w, new_b;
      if (is_conv) {
        Shape bshape(static_cast<size_t>(w.dim()), 1);
        bshape[0] = channels;
        new_w = mul(w, s.reshape(bshape));
        const Tensor b = has_bias ? graph.value(prod.inputs[2]).constant : zeros({channels}, w.dtype());
        new_b = add(mul(sub(b, mean), s), beta);
      } else {
        if (prod.get_int("transA", 0) != 0 && w.dim() != 2) continue;
        new_w = prod.get_int("transB", 0) ? mul(w, s.reshape({channels, 1})) : mul(w, s.reshape({1, channels}));
        const double gemm_beta = prod.get_float("beta", 1.0);
        const Tensor c = has_bias ? mul(graph.value(prod.inputs[2]).constant, gemm_beta) : zeros({channels}, w.dtype());
        new_b = add(mul(sub(c, mean), s), beta);
        prod.attrs["beta"] = 1.0;
      }
      const std::string base = prod.name.empty() ? bn.name : prod.name;
      const std::string& w_name = graph.value(prod.inputs[1]).name;
      const bool dotted = w_name.size() > 7 && w_name.compare(w_name.size() - 7, 7, ".weight") == 0;
      const std::string b_name = dotted ? w_name.substr(0, w_name.size() - 7) + ".bias" : base + "/folded_bias";
      prod.inputs[1] = replace_constant(graph, prod.inputs[1], p, base + "/folded_weight", new_w.to(w.dtype()));
      if (has_bias) {
        prod.inputs[2] = replace_constant(graph, prod.inputs[2], p, b_name, new_b.to(w.dtype()));
      } else {
        prod.inputs.resize(3);
        prod.inputs[2] = graph.add_constant(graph.find_value(b_name) < 0 ? b_name : base + "/folded_bias",
                                            new_b.to(w.dtype()).contiguous());
      }
    } catch (const Error& e) {
      return fail(e.status(), "folding " + bn.label() + " into " + prod.label() + ": " + e.what());
    }
    // The producer now writes the BatchNorm's output (its name survives).
    prod.outputs[0] = bn.outputs[0];
    dead[i] = true;
    ++folded;
  }
  graph.erase_nodes(dead);
  return folded;
}

namespace {

// The shape as dims every one of which is known (a number or a named symbol).
bool fully_known(const Value& v) {
  return v.shape && std::all_of(v.shape->begin(), v.shape->end(),
                                [](const Dim& d) { return d.is_static() || !d.symbol.empty(); });
}

// A 3x3 convolution of stride 1, dilation 1 and one group (weight w): the
// shape the CPU's Winograd kernel takes, which adds a residual as it stores
// its output tiles. (After other convolutions a pass adds it, no faster than
// the Add: MobileNetV2's 1x1 projections with it 1-3 % slower in all.)
bool winograd_shape(const Node& conv, const Value& w) {
  const std::vector<int64_t> ones = {1, 1};
  return w.shape && w.shape->size() == 4 && (*w.shape)[2] == Dim::fixed(3) && (*w.shape)[3] == Dim::fixed(3) &&
         conv.get_int("group", 1) == 1 && conv.get_ints("strides", ones) == ones &&
         conv.get_ints("dilations", ones) == ones;
}

}  // namespace

int fuse_residual_adds(Graph& graph) {
  int fused = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& add = graph.nodes[i];
    if (add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1 || add.outputs[0] < 0) continue;
    for (int side = 0; side < 2; ++side) {
      const int y = add.inputs[static_cast<size_t>(side)], r = add.inputs[static_cast<size_t>(1 - side)];
      if (y < 0 || r < 0 || y == r) continue;
      const int p = graph.producer_of(y);
      if (p < 0 || dead[static_cast<size_t>(p)] || sole_user(graph, y) != static_cast<int>(i)) continue;
      const Node& conv = graph.nodes[static_cast<size_t>(p)];
      if (conv.op_type != "Conv" || conv.has("activation") || conv.inputs.size() < 2 || conv.inputs.size() > 3 ||
          conv.outputs.size() != 1) {
        continue;
      }
      const Value &wv = graph.value(conv.inputs[1]), &yv = graph.value(y), &rv = graph.value(r);
      if (!winograd_shape(conv, wv)) continue;
      if (yv.dtype != DType::Float32 || rv.dtype != DType::Float32 || !fully_known(yv) || !fully_known(rv) ||
          *yv.shape != *rv.shape) {
        continue;  // a broadcasting Add stays an Add
      }
      // The Conv moves to the Add's place (its inputs were ready before; the
      // residual may be computed after it).
      Node fused_conv = conv;
      fused_conv.inputs.resize(4, -1);
      fused_conv.inputs[3] = r;
      fused_conv.outputs = add.outputs;
      graph.nodes[i] = std::move(fused_conv);
      dead[static_cast<size_t>(p)] = true;
      ++fused;
      break;
    }
  }
  graph.erase_nodes(dead);
  return fused;
}

int fuse_activations(Graph& graph) {
  int fused = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& prod = graph.nodes[i];
    if ((prod.op_type != "Conv" && prod.op_type != "Gemm") || prod.has("activation")) continue;
    if (prod.outputs.empty() || prod.outputs[0] < 0) continue;
    const int u = sole_user(graph, prod.outputs[0]);
    if (u < 0) continue;
    const Node& act = graph.nodes[static_cast<size_t>(u)];
    if (act.op_type == "Relu" || act.op_type == "HardSwish") {
      prod.attrs["activation"] = act.op_type;
    } else if (act.op_type == "Clip" && act.inputs[0] == prod.outputs[0]) {
      const bool lo = act.inputs.size() > 1 && act.inputs[1] >= 0;
      const bool hi = act.inputs.size() > 2 && act.inputs[2] >= 0;
      if ((lo && !graph.is_constant(act.inputs[1])) || (hi && !graph.is_constant(act.inputs[2]))) continue;
      prod.attrs["activation"] = std::string("Clip");
      if (lo) prod.attrs["activation_min"] = graph.value(act.inputs[1]).constant.item().to_double();
      if (hi) prod.attrs["activation_max"] = graph.value(act.inputs[2]).constant.item().to_double();
    } else {
      continue;
    }
    prod.outputs[0] = act.outputs[0];
    dead[static_cast<size_t>(u)] = true;
    ++fused;
  }
  graph.erase_nodes(dead);
  return fused;
}

int fuse_matmul_bias(Graph& graph) {
  int fused = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& mm = graph.nodes[i];
    if (mm.op_type != "MatMul" || mm.inputs.size() != 2 || mm.outputs.empty() || mm.outputs[0] < 0) continue;
    const Value& x = graph.value(mm.inputs[0]);
    if (!x.shape || x.shape->size() < 2 || !graph.is_constant(mm.inputs[1])) continue;
    const Tensor& w = graph.value(mm.inputs[1]).constant;
    if (w.dim() != 2 || w.dtype() != DType::Float32 || x.dtype != DType::Float32) continue;
    const int u = sole_user(graph, mm.outputs[0]);
    if (u < 0) continue;
    const Node& add = graph.nodes[static_cast<size_t>(u)];
    if (add.op_type != "Add" || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) continue;
    const int c = add.inputs[0] == mm.outputs[0] ? add.inputs[1] : add.inputs[0];
    if (!graph.is_constant(c)) continue;
    const Tensor& bias = graph.value(c).constant;
    if (bias.dim() != 1 || bias.dtype() != DType::Float32 || bias.size(0) != w.size(1)) continue;
    mm.op_type = "Gemm";
    mm.kind = map_onnx_op("Gemm");
    mm.inputs.push_back(c);
    mm.outputs[0] = add.outputs[0];
    dead[static_cast<size_t>(u)] = true;
    ++fused;
  }
  graph.erase_nodes(dead);
  return fused;
}

namespace {

// fuse_matmul_bias's form: x [.., K] @ W [K, N] + bias [N], float32, no attributes.
bool plain_gemm(const Graph& graph, const Node& n) {
  if (n.op_type != "Gemm" || !n.attrs.empty() || n.inputs.size() != 3 || n.outputs.size() != 1 || n.outputs[0] < 0)
    return false;
  if (!graph.is_constant(n.inputs[1]) || !graph.is_constant(n.inputs[2])) return false;
  const Tensor &w = graph.value(n.inputs[1]).constant, &b = graph.value(n.inputs[2]).constant;
  const Value& y = graph.value(n.outputs[0]);
  return w.dim() == 2 && w.dtype() == DType::Float32 && b.dim() == 1 && b.size(0) == w.size(1) && y.shape &&
         !y.shape->empty();
}

}  // namespace

int merge_sibling_gemms(Graph& graph) {
  int merged = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<std::pair<size_t, Node>> splits;  // (after node, Split)
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (dead[i] || !plain_gemm(graph, graph.nodes[i])) continue;
    const int x = graph.nodes[i].inputs[0];
    const int64_t k = graph.value(graph.nodes[i].inputs[1]).constant.size(0);
    std::vector<size_t> group = {i};
    for (size_t j = i + 1; j < graph.nodes.size(); ++j) {
      const Node& n = graph.nodes[j];
      if (!dead[j] && plain_gemm(graph, n) && n.inputs[0] == x && n.inputs[1] != graph.nodes[i].inputs[1] &&
          graph.value(n.inputs[1]).constant.size(0) == k) {
        group.push_back(j);
      }
    }
    if (group.size() < 2) continue;
    std::vector<Tensor> ws, bs;
    std::vector<int64_t> sizes;
    std::vector<int> outs;
    for (size_t j : group) {
      const Node& n = graph.nodes[j];
      ws.push_back(graph.value(n.inputs[1]).constant);
      bs.push_back(graph.value(n.inputs[2]).constant);
      sizes.push_back(ws.back().size(1));
      outs.push_back(n.outputs[0]);
      if (j != i) dead[j] = true;
    }
    Node& first = graph.nodes[i];
    const std::string base = first.name.empty() ? graph.value(outs[0]).name : first.name;
    Value y = graph.value(outs[0]);
    y.name = base + "/merged";
    int64_t total = 0;
    for (int64_t n : sizes) total += n;
    y.shape->back() = Dim::fixed(total);
    first.inputs[1] = graph.add_constant(base + "/merged_weight", cat(ws, 1));
    first.inputs[2] = graph.add_constant(base + "/merged_bias", cat(bs, 0));
    first.outputs[0] = graph.add_value(std::move(y));
    Node split;
    split.name = base + "/split";
    split.op_type = "Split";
    split.kind = map_onnx_op("Split");
    split.attrs["axis"] = static_cast<int64_t>(graph.value(first.outputs[0]).shape->size()) - 1;
    split.inputs = {first.outputs[0],
                    graph.add_constant(base + "/split_sizes", tensor(sizes, {static_cast<int64_t>(sizes.size())}))};
    split.outputs = outs;
    splits.emplace_back(i, std::move(split));
    merged += static_cast<int>(group.size());
  }
  if (merged > 0) add_nodes_after(graph, std::move(splits), dead);
  return merged;
}

namespace {

// The one node that reads value `id`'s elements, or -1: the value is no graph
// output and every other reader is a Shape node (torch's .view(B, S, h, d)
// reads the Linear's output's shape), which scaling the values leaves alone.
int sole_value_reader(const Graph& graph, int id) {
  if (id < 0 || graph.is_graph_output(id)) return -1;
  int reader = -1;
  for (int u : graph.users_of(id)) {
    if (graph.nodes[static_cast<size_t>(u)].op_type == "Shape") continue;
    if (reader >= 0) return -1;
    reader = u;
  }
  return reader;
}

// A constant float32 value of one element, of rank at most `rank` (so that
// broadcasting it changes no shape), finite and nonzero.
bool scalar_factor(const Graph& graph, int id, size_t rank) {
  if (!graph.is_constant(id)) return false;
  const Tensor& t = graph.value(id).constant;
  if (t.dtype() != DType::Float32 || t.numel() != 1 || static_cast<size_t>(t.dim()) > rank) return false;
  const float f = t.to_vector<float>()[0];
  return std::isfinite(f) && f != 0.0f;
}

// A Gemm whose output scales with its constant float32 B and C: Y = alpha
// A'B' + beta C, any transA/transB/alpha/beta; no fused activation.
bool scalable_gemm(const Graph& graph, const Node& n) {
  if (n.op_type != "Gemm" || n.has("activation") || n.inputs.size() < 2 || n.inputs.size() > 3 ||
      n.outputs.size() != 1 || graph.value(n.outputs[0]).dtype != DType::Float32) {
    return false;
  }
  auto f32_constant = [&](int id) {
    return graph.is_constant(id) && graph.value(id).constant.dtype() == DType::Float32;
  };
  return f32_constant(n.inputs[1]) && (n.inputs.size() < 3 || n.inputs[2] < 0 || f32_constant(n.inputs[2]));
}

// The Gemm whose output reaches value `v` (read by node `reader`) through
// Reshape/Transpose/Squeeze/Unsqueeze nodes (their data input), every value on
// the way read by the next node alone (Shape nodes aside), or -1.
int scalable_gemm_behind(const Graph& graph, int v, int reader) {
  for (;;) {
    if (sole_value_reader(graph, v) != reader) return -1;
    const int p = graph.producer_of(v);
    if (p < 0) return -1;
    const Node& n = graph.nodes[static_cast<size_t>(p)];
    if (n.op_type == "Gemm") return scalable_gemm(graph, n) ? p : -1;
    const bool layout = n.op_type == "Reshape" || n.op_type == "Transpose" || n.op_type == "Squeeze" ||
                        n.op_type == "Unsqueeze";
    if (!layout || n.inputs.empty() || n.outputs.size() != 1) return -1;
    v = n.inputs[0];
    reader = p;
  }
}

}  // namespace

int fold_attention_scales(Graph& graph) {
  int folded = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& d = graph.nodes[i];
    const bool divide = d.op_type == "Div";
    if ((!divide && d.op_type != "Mul") || d.inputs.size() != 2 || d.outputs.size() != 1 || d.outputs[0] < 0) continue;
    if (graph.value(d.outputs[0]).dtype != DType::Float32) continue;
    for (size_t side = 0; side < (divide ? 1u : 2u); ++side) {  // Div(M, c); Mul(M, c) or Mul(c, M)
      const int m = d.inputs[side], c = d.inputs[1 - side];
      if (m < 0 || m == c || sole_user(graph, m) != static_cast<int>(i)) continue;
      const int p = graph.producer_of(m);
      if (p < 0) continue;
      const Node& mm = graph.nodes[static_cast<size_t>(p)];
      if (mm.op_type != "MatMul" || mm.inputs.size() != 2 || mm.outputs.size() != 1 || mm.inputs[0] == mm.inputs[1]) {
        continue;
      }
      const Value& mv = graph.value(m);
      if (mv.dtype != DType::Float32 || !mv.shape) continue;
      if (!scalar_factor(graph, c, mv.shape->size())) continue;
      int g = scalable_gemm_behind(graph, mm.inputs[0], p);
      if (g < 0) g = scalable_gemm_behind(graph, mm.inputs[1], p);
      if (g < 0) continue;
      // New constants (a weight or bias another node reads keeps its values).
      Node& gemm = graph.nodes[static_cast<size_t>(g)];
      const bool has_bias = gemm.inputs.size() > 2 && gemm.inputs[2] >= 0;
      // t / c or t * c by the eager ops, as the Div or Mul computes it (c as [1]).
      const Tensor f = graph.value(c).constant.reshape({1});
      auto scaled = [&](int id) {
        const Tensor& t = graph.value(id).constant;
        return divide ? div(t, f) : mul(t, f);
      };
      const Tensor w = scaled(gemm.inputs[1]);
      const Tensor b = has_bias ? scaled(gemm.inputs[2]) : Tensor();
      const std::string w_name = graph.value(gemm.inputs[1]).name;
      gemm.inputs[1] = replace_constant(graph, gemm.inputs[1], g, w_name + "/scaled", w);
      if (has_bias) {
        const std::string b_name = graph.value(gemm.inputs[2]).name;
        gemm.inputs[2] = replace_constant(graph, gemm.inputs[2], g, b_name + "/scaled", b);
      }
      // The MatMul now writes the Div's or Mul's output (its name survives).
      graph.nodes[static_cast<size_t>(p)].outputs[0] = d.outputs[0];
      d.inputs.clear();
      d.outputs.clear();
      dead[i] = true;
      ++folded;
      break;
    }
  }
  graph.erase_nodes(dead);
  return folded;
}

int conv1d_to_conv2d(Graph& graph) {
  std::vector<Node> nodes;
  int rewritten = 0;
  for (Node& node : graph.nodes) {
    const bool conv1d = node.op_type == "Conv" && node.inputs.size() >= 2 && graph.is_constant(node.inputs[1]) &&
                        graph.value(node.inputs[1]).constant.dim() == 3 && !node.outputs.empty() &&
                        node.outputs[0] >= 0;
    if (!conv1d) {
      nodes.push_back(std::move(node));
      continue;
    }
    const std::string base = node.name.empty() ? graph.value(node.outputs[0]).name : node.name;
    const Tensor w = graph.value(node.inputs[1]).constant;
    node.inputs[1] = graph.add_constant(base + "/weight_2d", w.unsqueeze(2).contiguous());
    auto widen = [&](const char* attr, int64_t pad_value) {
      if (!node.has(attr)) return;
      const std::vector<int64_t> v = node.get_ints(attr);
      node.attrs[attr] = std::vector<int64_t>{pad_value, v.empty() ? pad_value : v[0]};
    };
    widen("kernel_shape", 1);
    widen("strides", 1);
    widen("dilations", 1);
    if (node.has("pads")) {
      const std::vector<int64_t> p = node.get_ints("pads");
      if (p.size() == 2) node.attrs["pads"] = std::vector<int64_t>{0, p[0], 0, p[1]};
    }
    const int axes = graph.add_constant(base + "/axis_2", tensor(std::vector<int64_t>{2}, {1}));
    // [N, C, L] -> [N, C, 1, L] -> Conv -> [N, O, 1, L'] -> [N, O, L'].
    auto with_dim2 = [&](int id, const std::string& name) {
      Value v;
      v.name = name;
      v.dtype = graph.value(id).dtype;
      if (graph.value(id).shape && graph.value(id).shape->size() == 3) {
        std::vector<Dim> d = *graph.value(id).shape;
        d.insert(d.begin() + 2, Dim::fixed(1));
        v.shape = d;
      }
      return graph.add_value(std::move(v));
    };
    const int x4 = with_dim2(node.inputs[0], base + "/input_2d");
    const int y3 = node.outputs[0];
    const int y4 = with_dim2(y3, base + "/output_2d");
    Node unsq;
    unsq.name = base + "/to_2d";
    unsq.op_type = "Unsqueeze";
    unsq.kind = map_onnx_op("Unsqueeze");
    unsq.inputs = {node.inputs[0], axes};
    unsq.outputs = {x4};
    Node sq;
    sq.name = base + "/from_2d";
    sq.op_type = "Squeeze";
    sq.kind = map_onnx_op("Squeeze");
    sq.inputs = {y4, axes};
    sq.outputs = {y3};
    node.inputs[0] = x4;
    node.outputs[0] = y4;
    nodes.push_back(std::move(unsq));
    nodes.push_back(std::move(node));
    nodes.push_back(std::move(sq));
    ++rewritten;
  }
  graph.nodes = std::move(nodes);
  return rewritten;
}

}  // namespace ember::converter
