// The lowering's internals, shared by lower.cc (the driver, the helpers and
// the ONNX op table) and the lower_*.cc files (the lowering functions of each
// op family). Not part of the converter's interface.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "runtime/core/error.h"

namespace ember::converter::lowering {

inline std::string node_label(const Node& n) {
  return n.op_type + " '" + (n.name.empty() ? std::string("<unnamed>") : n.name) + "'";
}

// d * f, unknown when d is.
Dim dim_times(const Dim& d, int64_t f);

inline std::string join_ints(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// A problem with one node: thrown inside the node's lowering, collected by lower().
struct NodeError {
  std::string reason;
};

[[noreturn]] inline void refuse(std::string reason) { throw NodeError{std::move(reason)}; }

// The largest finite value of a float8 format (ONNX's saturation bound); 0
// for other dtypes (lower_dtypes.cc).
double float8_max(DType dt);

class Lowerer;

// One entry of the ONNX op table (OnnxOpTable below): how nodes of an ONNX op
// type are lowered at the opsets [since, until].
struct OnnxLowering {
  std::string_view type;
  int64_t since, until;
  void (Lowerer::*lower)(const Node&);
  std::optional<OpKind> kind;  // the ember op it becomes, where there is one
};

// The entry for `type` at `opset`, or null.
const OnnxLowering* find_lowering(std::string_view type, int64_t opset);
class Lowerer {
  friend struct OnnxOpTable;

 public:
  // `subgraphs`: where the control-flow ops' subgraphs go (a subgraph's
  // Lowerer adds to the main graph's list); null: this graph's own ModelDef.
  explicit Lowerer(const Graph& g, std::vector<ModelDef>* subgraphs = nullptr)
      : g_(g), dtypes_(g.values.size()), tensor_of_(g.values.size(), -1),
        subgraphs_(subgraphs != nullptr ? subgraphs : &def_.subgraphs) {
    for (size_t i = 0; i < g.values.size(); ++i) dtypes_[i] = g.values[i].dtype;
  }

  Expected<ModelDef> run();

 private:
  const OnnxLowering* entry_ = nullptr;  // of the node being lowered
  // lower_dtypes.cc: Cast / CastLike of input 0 into output 0 (saturate).
  void emit_cast(const Node& n, DType to);
  // The lowering functions of the ONNX op table (converter/onnx_ops.inc).
#define RT_LOWERING(fn) void fn(const Node& n);
#define RT_ONNX(type, since, until, fn, kind)
#include "converter/onnx_ops.inc"
#undef RT_ONNX
#undef RT_LOWERING

  // ---- values and tensors ----

  // Value `id`; an omitted input (-1) or an id out of range is a NodeError.
  const Value& val(int id) const {
    if (id < 0 || static_cast<size_t>(id) >= g_.values.size()) refuse("reads an input that is missing");
    return g_.value(id);
  }
  bool is_const(int id) const { return g_.is_constant(id); }
  // The name of a value for messages.
  std::string vname(int id) const { return "'" + val(id).name + "'"; }

  std::string unique_name(std::string name, int id);

  // The tensor index of value `id` (-1 for an omitted input), created on first use.
  int32_t tensor(int id);
  // Why value `id` has no rank, where its producer tells (an If whose branches differ): " (...)" or "".
  std::string rank_hint(int id) const;

  // A new weight that is no IR value (a transposed Gemm weight, a reshaped bias).
  int32_t new_weight(const std::string& name, const Tensor& data, bool trainable);
  std::string transposed_name(int b) const;  // lower_nn.cc

  // A new activation (an intermediate of a Max/Min chain).
  int32_t new_activation(const std::string& name, DType dtype, const std::vector<Dim>& shape);

  // The tensor of a weight input: float constants are trainable.
  int32_t weight(int id);

  std::optional<DType> dtype_of(int id) const {
    return id < 0 ? std::nullopt : dtypes_[static_cast<size_t>(id)];
  }

  // The rank of value `id`, or a NodeError.
  int64_t rank_of(int id, const std::string& what) const;

  // Sets the dtypes of the node's outputs the IR does not know (simple rules).
  void infer_output_dtypes(const Node& n);

  // ---- constant inputs read as params ----

  bool has_input(const Node& n, size_t i) const { return n.inputs.size() > i && n.inputs[i] >= 0; }

  // The values of constant int input `i` (nullopt when absent), or a NodeError.
  std::optional<std::vector<int64_t>> const_ints(const Node& n, size_t i, const std::string& what) const;

  // A constant scalar input (nullopt when absent), or a NodeError.
  std::optional<Scalar> const_scalar(const Node& n, size_t i, const std::string& what) const;

  static int64_t norm_axis(int64_t axis, int64_t rank, const std::string& what);

  DType cast_target(const Node& n) const;

  Tensor constant_of_shape_value(const Node& n) const;

  Activation fused_activation(const Node& n) const;

  // ---- emitting ops ----

  // Appends an op. `inputs` are tensor indices (created while the arguments
  // are evaluated), `outputs` value ids: their tensors are created here, after
  // the inputs', so tensors appear in reading order.
  void emit(OpKind kind, const Node& n, std::vector<int32_t> inputs, const std::vector<int>& outputs,
            OpParams params = NoParams{});

  void emit_tensors(OpKind kind, std::vector<int32_t> inputs, std::vector<int32_t> outputs, OpParams params,
                    std::string name);

  // The node's first output (the only output most ops have).
  int out0(const Node& n) const {
    if (n.outputs.empty() || n.outputs[0] < 0) refuse("has no output");
    return n.outputs[0];
  }

  // Outputs beyond the first must be unused (omitted or read by nobody).
  void require_unused_extra_outputs(const Node& n, const std::string& what) const;
  // Whether output k of `n` is read by a node or is a graph output.
  bool output_used(const Node& n, size_t k) const;

  void require_inputs(const Node& n, size_t min_count) const;

  // Symmetric 2-D pads from ONNX [top, left, bottom, right] (or auto_pad).
  void spatial_pads(const Node& n, int id_x, const int64_t kernel[2], const int64_t stride[2],
                    const int64_t dilation[2], int64_t out[2]) const;

  // Reads a 2-value attribute (default `fallback`) into out[2]: strides,
  // dilations or kernel_shape, each value >= 1 (else a NodeError).
  static void pair_attr(const Node& n, const std::string& attr, int64_t fallback, int64_t out[2]);

  // Lowers `n` by its entry of the ONNX op table (OnnxOpTable, below).
  void lower_node(const Node& n, const OnnxLowering& entry);
  // Identity and inference Dropout the passes could not remove (a graph
  // input straight to an output): a Copy; Dropout's mask: all true.

  DimsParams dims_params(const std::vector<int64_t>& dims, const std::string& what) const;


  // Broadcast of two shapes (numpy rules); unknown where it cannot be told.
  static std::vector<Dim> broadcast(const std::vector<Dim>& a, const std::vector<Dim>& b);

  std::vector<Dim> dims_of(int id, const std::string& what) const;

  // Max/Min: 1 input a Copy, 2 the binary op, more a chain of binary ops.


  void lower_gemm_matmul(const Node& n);  // transA, alpha, beta, a matrix C, a non-constant B

  static std::string fmt(double v);

  // Conv's attributes (input x, weight w: 2-D convolutions only).
  Conv2dParams conv_params(const Node& n, int x, int w) const;


  // lower_reduce.cc: the Reduce* ops and ArgMax/ArgMin.
  bool reduce_params(const Node& n, int64_t rank, ReduceParams& p, int* runtime_axes = nullptr) const;
  static std::vector<Dim> reduced_shape(const std::vector<Dim>& in, const ReduceParams& p, bool keepdim);
  std::vector<Dim> runtime_reduced_shape(const std::vector<Dim>& in, int axes, bool keepdim) const;

  // lower_composite.cc: ops composed of several ember ops.
  int32_t scalar_weight(const std::string& name, double v, DType dt);
  // LayerNormalization whose Mean or InvStdDev output is used.
  void lower_layer_norm_stats(const Node& n);


  // lower_rnn.cc: LSTM, GRU and RNN, unrolled over their static time steps.
  class Recurrence;  // the unrolling of one node
  // The dims of tensor `t` as the ModelDef declares them.
  std::vector<Dim> tensor_dims(int32_t t) const;
  // Emits `kind` into a new activation named `name` of dtype `dt` and shape
  // `shape` (or into tensor `into` when it is >= 0); returns its tensor.
  int32_t emit_new(OpKind kind, std::vector<int32_t> inputs, DType dt, const std::vector<Dim>& shape,
                   OpParams params, const std::string& name, int32_t into = -1);
  // A binary elementwise op into a new activation of dtype `dt` (the shape broadcast).
  int32_t binary_new(OpKind kind, int32_t a, int32_t b, DType dt, const std::string& name, int32_t into = -1);
  // `t` converted to `dt` (a Copy; `t` itself when it has that dtype and no `into` is given).
  int32_t cast_new(int32_t t, DType dt, const std::string& name, int32_t into = -1);
  // A constant int64 vector weight (Slice starts, Reshape shapes...).
  int32_t ints_weight(const std::string& name, const std::vector<int64_t>& v);

  // lower_quant.cc: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
  // MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
  // Scale or zero point `id` as dtype `dt`, shaped to broadcast against a
  // tensor of shape `x`: one element as it is, 1-D per `axis`, x's rank
  // blocked along `axis` (`block` elements per value).
  int32_t quant_param(int id, const std::vector<Dim>& x, int64_t axis, int64_t block, DType dt,
                      const std::string& name);
  // x - zero point in int32, then MatMul or Conv2d (with the int32 bias): the exact integer product.
  int32_t integer_product(const Node& n, const int (&ids)[5], const std::string& name, int32_t into);
  // saturate(round(acc * multiplier + zero point)) to `dt`, computed in float64, into `into`.
  void requantize(int32_t acc, int32_t multiplier, int zero_point, DType dt, const std::vector<Dim>& shape,
                  const std::string& name, int32_t into);

  // lower_math.cc: ops composed of elementwise, reduction and matrix ops.
  // Einsum's ops for operand labels `labels` (letters; "..." dims negative) and output labels `out`.
  void lower_einsum_terms(const Node& n, std::vector<std::vector<int>> labels, const std::vector<int>& out,
                          const std::map<int, Dim>& size, DType dt);

  // lower_attn.cc, lower_attention.cc, lower_linear_attn.cc: the attention family.
  DType tensor_dtype(int32_t t) const;
  // The dtype of input i, which must be floating point, or a NodeError.
  DType float_input(const Node& n, size_t i) const;
  // Reshape of tensor t to `shape` (ONNX's 0 and -1), declared as `dims`.
  int32_t reshape_new(int32_t t, const std::vector<int64_t>& shape, const std::vector<Dim>& dims,
                      const std::string& name, int32_t into = -1);
  int32_t permute_new(int32_t t, const std::vector<int64_t>& perm, const std::string& name, int32_t into = -1);
  // [start, end) with `step` along one axis of tensor t.
  int32_t slice_new(int32_t t, int64_t axis, int64_t start, int64_t end, int64_t step, const std::string& name,
                    int32_t into = -1);
  int32_t unsqueeze_new(int32_t t, int64_t axis, const std::string& name);
  // a [B, Hq, M, K] x b [B, Hkv, K, N] -> [B, Hq, M, N], each kv head serving Hq / Hkv adjacent q heads.
  int32_t grouped_matmul_new(int32_t a, int32_t b, int64_t hq, int64_t hkv, const std::string& name,
                             int32_t into = -1);
  // x * sigmoid(alpha * x).
  int32_t swish_new(int32_t x, double alpha, const std::string& name, int32_t into = -1);
  class Attention;  // the lowering of one Attention node
  // ai.onnx.preview::FlexAttention without score_mod / prob_mod: 4-D Attention with scale and softmax_precision.
  // Conv with a 3-D weight (CausalConvWithState's function body, 1-D models): Conv2d over [N, C, 1, L].
  void lower_conv1d(const Node& n);
  // ---- ONNX ops composed of existing ember ops (lower_loss.cc, lower_layout.cc, lower_pool_norm.cc,
  // lower_signal.cc) ----
  // lower_layout.cc: helpers. A 0-d int64 constant.
  int32_t int_scalar(const std::string& name, int64_t v);
  // The size of dim `axis` of tensor `x` as a 0-d int64 (a constant where static, else ShapeOf, Gather).
  int32_t dim_size(int32_t x, int64_t axis, const std::string& name);
  // Range(0, count) (`count` a 0-d int64 tensor) along `axis` of a rank-`rank` shape [1, .., size, .., 1].
  int32_t arange_along(int32_t count, int64_t axis, int64_t rank, const Dim& size, const std::string& name);
  // int64 positions 0..size-1 along `axis` of a rank-`rank` tensor, shaped [1, .., size, .., 1]; a
  // dynamic size is read from tensor `x` at run time.
  int32_t positions(int32_t x, int64_t axis, int64_t rank, const Dim& size, const std::string& name);
  // Sets the dtype of output value `id` (a NodeError when it is declared otherwise).
  void set_output_dtype(int id, DType dt);
  // A Sum / Mean / Max / ... of `t` over the dims of mask `dims`.
  int32_t reduce_new(OpKind kind, int32_t t, uint32_t dims, bool keepdim, const std::string& name, int32_t into = -1);
  void lower_reshape_allowzero(const Node& n);
  // lower_crop_pad.cc: windows along an axis (Pad's general forms, CenterCropPad).
  int32_t floor_mod(int32_t a, int32_t b, const std::string& name);
  // out[j] = t[j + offset] along `axis` for j < length (0-d int64 tensors); outside t by `mode`:
  // Constant takes `fill`, Replicate the edge, Reflect and Circular as np.pad.
  int32_t window(int32_t t, int64_t axis, int32_t offset, int32_t length, const Dim& out_dim, PadMode mode,
                 int32_t fill, const std::string& name, int32_t into = -1);
  bool plain_pad(const Node& n) const;
  void lower_pad_window(const Node& n);
  // lower_norm.cc: normalizations composed of Mean, Var, Rsqrt and elementwise ops.
  int32_t standardize(int32_t t, uint32_t dims, double eps, const std::string& name, int32_t* mean_out = nullptr,
                      int32_t* var_out = nullptr);
  int32_t channel_param(int id, int64_t rank, DType dt, const std::string& name);
  void lower_batch_norm_training(const Node& n);
  // lower_signal.cc: HannWindow, HammingWindow, BlackmanWindow.
  // lower_pool.cc: pools beyond one 2-D pooling op (explicit Pad, 2-D steps).
  struct PoolGeometry;
  PoolGeometry pool_geometry(const Node& n, const std::vector<Dim>& xs) const;
  int32_t pool_pad(int32_t t, const PoolGeometry& g, bool declared, bool with_extra, double value,
                   const std::string& name);
  int32_t pool_step(int32_t t, bool max, const int64_t k[2], const int64_t s[2], const int64_t d[2],
                    const std::string& name);
  int32_t pool_windows(int32_t t, const PoolGeometry& g, bool max, const std::string& name, int32_t into = -1);
  bool plain_pool(const Node& n) const;
  void lower_max_pool_indices(const Node& n, const Pool2dParams& p);
  // lower_index.cc: indexing, scan and selection ops.
  std::vector<int64_t> static_dims(int id, const std::string& what) const;
  void require_index_dtype(int id, const std::string& what) const;
  // Sets output k's dtype where the IR does not know it.
  void set_output_dtype(const Node& n, size_t k, DType dt);
  static ScatterReduction scatter_reduction(const Node& n);
  // The linear position of each index tuple of `id` ([..., k]) in the leading dims `dims`.
  int32_t linear_index(int id, const std::vector<int64_t>& dims, const std::string& base);

  // lower_control.cc: subgraph `sg` of control-flow node `n` (its inputs'
  // missing types completed from the node's inputs) lowered into the
  // model's subgraphs; returns its index.
  int32_t lower_subgraph(const Node& n, Graph sg, const std::string& attr);

  const Graph& g_;
  ModelDef def_;
  std::vector<std::optional<DType>> dtypes_;  // per value: the IR's or inferred
  std::vector<int32_t> tensor_of_;            // per value: its tensor index, or -1
  std::map<int, int32_t> transposed_of_;      // per constant B of a Gemm (transB = 0): its transposed weight
  std::set<std::string> names_;
  std::vector<std::string> errors_;
  std::vector<ModelDef>* subgraphs_;  // the main graph's def_.subgraphs
};

}  // namespace ember::converter::lowering
