// Graph passes over the converter IR. Each returns how much it changed, so the
// converter can report what it did; run_passes() runs them all in order.
//
// Constant values are computed with ember's eager ops (runtime/ops/ops.h) and,
// for graph ops (Reshape, Slice, Gather, Squeeze, ...), with the executor's own
// ONNX graph ops (runtime/model/graph_ops.h): there is no second
// implementation of any op here. Sources: fold.cc (constants), shape_fold.cc
// (shapes), fuse.cc (BatchNorm, activations, MatMul biases, attention
// scales, Conv1d), passes.cc (the rest).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "converter/ir.h"

namespace ember::converter {

// What run_passes() changed.
struct PassReport {
  int constants_folded = 0;    // nodes evaluated into constants
  int shapes_folded = 0;       // Shape (or Gather of a Shape) nodes made constant
  int identities_removed = 0;  // Identity and inference Dropout nodes
  int dead_nodes_removed = 0;
  int batchnorms_folded = 0;   // BatchNormalization folded into Conv/Gemm
  int activations_fused = 0;   // Relu/Clip/HardSwish fused into Conv/Gemm
  int matmul_biases_fused = 0; // MatMul + Add of a constant bias made one Gemm
  int attention_scales_folded = 0; // Div/Mul of a MatMul by a constant folded into a Gemm's weight and bias
  int values_dropped = 0;      // unreferenced values (constants, mostly) dropped
  int ifs_inlined = 0;         // If nodes of constant condition replaced by their branch
  int convs_made_2d = 0;       // 1-D Convs rewritten as Unsqueeze, 2-D Conv, Squeeze
  int layer_norms_fused = 0;   // LayerNorms exported as 9 nodes made one LayerNormalization
  int gelus_fused = 0;         // GELUs exported as 5 nodes made one Gelu
  int hardswishes_fused = 0;   // Mul(x, HardSigmoid(x)) made one HardSwish
  int residual_adds_fused = 0; // Adds of a Conv's output and a residual made the Conv's 4th input
  int recurrences_scanned = 0; // LSTM/GRU/RNN over a dynamic sequence length made Scans
  int attentions_fused = 0;    // MatMul [Mul|Div] [Add] Softmax MatMul chains made one ScaledDotProductAttention
  int gemms_merged = 0;        // Gemms of one input merged into one wider Gemm and a Split
  // "folded 12 constants, 3 shapes, ..." for the converter's report.
  std::string summary() const;
};

// Evaluates `node` on constant inputs (undefined Tensor for an omitted optional
// input). NotSupported when the op has no evaluator (Conv, pooling, ...);
// another status when the inputs are invalid for the op.
Expected<std::vector<Tensor>> evaluate_node(const Node& node, const std::vector<Tensor>& inputs);

// Replaces every node whose inputs are all constants (and whose op can be
// evaluated) by constant values. Outputs above `max_elements` elements are left
// to run time, so folding never bloats a model. Returns the nodes folded.
Expected<int> fold_constants(Graph& graph, int64_t max_elements = int64_t{1} << 20);

// Shape (or Size) of a value whose shape is static becomes a constant, and so does
// Gather(Shape(v), constant indices) when the gathered dims are static (the
// x.size(i) pattern with a symbolic batch). Returns the nodes replaced.
int fold_shapes(Graph& graph);

// Fills in what ONNX shape inference left out (it gives up after a Slice or
// Reshape whose starts or target come from a Shape sub-graph): for each node in
// order, the dtype and shape of its outputs from its inputs' (broadcasting,
// MatMul, Gemm, Slice, Reshape, Gather, Transpose, ...). Only fills: a dtype or
// a dim already known is never changed; a dim it cannot compute stays unknown
// (Dim{}), so the rank is known wherever the inputs' ranks are. The importer
// runs it after ONNX's inference and run_passes() after folding, when more
// inputs are constants. Returns the values it completed.
int infer_missing_shapes(Graph& graph);

// Removes Identity nodes and Dropout nodes whose mask is unused (inference),
// rewiring their readers. Returns the nodes removed.
int remove_identities(Graph& graph);

// Removes nodes none of whose outputs reaches a graph output. Returns the
// nodes removed (values are dropped by Graph::compact()).
int eliminate_dead_nodes(Graph& graph);

// BatchNormalization with constant parameters whose input comes from a Conv or
// Gemm with constant weights (and bias), and has no other reader, is folded
// into that node's weight and bias. Returns the BatchNorms folded.
Expected<int> fold_batchnorm(Graph& graph);

// A float32 MatMul(x, W) with a constant 2-D W whose only reader is Add of a
// constant 1-D bias of W's columns (either operand order) becomes one
// Gemm(x, W, bias) node (lowered to a Linear: x of any rank >= 2, as
// torch.nn.Linear takes it), so that the bias, and a Relu fused after it, are
// applied by the GEMM as it stores C. Returns the MatMuls fused.
int fuse_matmul_bias(Graph& graph);

// Attention's Div(MatMul(Q, Kt), sqrt(d)) (or a Mul by a constant, either
// operand order) folded into the Gemm that computes Q (or else Kt): the
// divisor a constant float32 of one element (rank at most the product's;
// finite, nonzero), the MatMul float32 and its output read by the Div or
// Mul alone; from an operand of the MatMul back through Reshape, Transpose,
// Squeeze and Unsqueeze nodes (data input) to a Gemm without an activation
// whose B and C (if any) are float32 constants, each value on the way read by
// the next node alone (Shape nodes aside: they read no elements) and no graph
// output. The Gemm's B and C become B / c and C / c (B * c, C * c for a Mul;
// float32, element by element; new constants where another node reads the old
// ones) and the MatMul writes the Div's output, one pass over [B, h, S, S]
// fewer. Run after fuse_matmul_bias (which makes torch's Linear a Gemm).
// Returns the Divs and Muls folded.
int fold_attention_scales(Graph& graph);

// Gemms of fuse_matmul_bias's form (x @ W + bias, float32, no attributes)
// that read the same x with weights of the same depth (attention's q, k and v
// projections) become one Gemm of the weights and biases concatenated, then a
// Split of its last dim into the original outputs (views at run time): x is
// read (and, in an int8 model, quantized) once, and the product is wider.
// Returns the Gemms merged.
int merge_sibling_gemms(Graph& graph);

// Attention as exported ops: MatMul(q, kt), an optional Mul or Div by a
// one-element float constant (the scale), an optional Add of a float32 mask
// that does not widen the scores, Softmax over the last axis and MatMul(p, v),
// every intermediate read by the next node alone, all of one rank, float32,
// becomes one ember::ScaledDotProductAttention (q, k, v, mask; attribute
// scale), its k a Transpose of kt's last two dims; a Transpose of the
// output's dims -3 and -2 alone after it becomes its transpose_output
// (fuse_attention.cc). Returns the chains fused.
int fuse_attention(Graph& graph);

// An Add of a Conv's output (its only reader; the Conv without an
// activation; 3x3, stride 1, dilation 1, one group: the shape whose CPU
// kernel adds the residual as it stores) and another float32 value of the
// same, fully known shape becomes the Conv with that value as a 4th input,
// the residual (Conv2d's: added to the convolution and its bias, before the
// activation), in the Add's place. Returns the Adds fused.
int fuse_residual_adds(Graph& graph);

// A Conv or Gemm whose only reader is Relu or Clip (constant bounds) takes the
// activation as attributes: "activation" = "Relu" or "Clip", and for Clip
// "activation_min"/"activation_max" (doubles; absent bound: no bound).
// Returns the activations fused.
int fuse_activations(Graph& graph);

// A Conv with a constant 3-D weight (Conv1d) becomes Unsqueeze(axis 2) ->
// Conv with a [O, I/g, 1, K] weight (kernel_shape, strides, dilations and pads
// widened with a leading 1 or 0) -> Squeeze(axis 2): ember runs 2-D
// convolutions only. The Conv keeps its fused activation. Returns the Convs
// rewritten.
int conv1d_to_conv2d(Graph& graph);

// LayerNorm as torch exports it below opset 17 (fuse_norm.cc):
// ReduceMean(x) -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div, over
// the last axis, then Mul by a constant [D] weight and optionally Add of a
// constant [D] bias, becomes one LayerNormalization(x, weight[, bias]) (axis
// -1, epsilon eps) when no intermediate value has other readers. Returns the
// LayerNorms fused.
int fuse_layer_norms(Graph& graph);

// GELU as torch exports it below opset 20 (fuse_norm.cc):
// Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5), constants within 1e-6,
// becomes one Gelu(x) (approximate "none") when no intermediate value has
// other readers. Returns the GELUs fused.
int fuse_gelus(Graph& graph);

// Hardswish as torch exports it below opset 14 (fuse_norm.cc): Mul(x,
// HardSigmoid(x)) with alpha 1/6 and beta 0.5 (within 1e-6), the HardSigmoid's
// output read by that Mul alone, becomes one HardSwish(x): one pass over the
// tensor instead of two. Returns the Hardswishes fused.
int fuse_hardswishes(Graph& graph);

// Control flow (control.cc). If, Loop and Scan: imported with their subgraphs
// (Node::graphs); an If whose condition folds to a constant is inlined, the
// rest become ember's If / Loop / Scan ops (lower_control.cc: each subgraph
// optimized and lowered on its own into the model's subgraphs).
bool is_control_flow_op(const std::string& op_type);

// Every If whose condition is a constant (one element) is replaced by the
// nodes of the branch it takes: their values get unique names (the source's
// names where no value of the graph has them already), the values the branch
// captured are wired to the If's inputs, and the If's outputs keep their ids
// and names (the branch node producing one writes it; an Identity copies a
// captured value or constant). Nested Ifs come along and are inlined on the
// next run. Returns the Ifs inlined.
int inline_constant_ifs(Graph& graph);

// An LSTM, GRU or RNN whose sequence length is not static and that is not
// recurrence_fusable becomes one Scan per direction whose body is the
// recurrence over one step (recurrence_scan.cc says what is left to
// lower_rnn.cc's refusal). Returns the nodes rewritten.
int recurrences_to_scans(Graph& graph);

// Whether lower_rnn.cc lowers the LSTM, GRU or RNN node `n` to one Recurrence
// op (at any sequence length): its activation functions are ONNX's defaults
// (an RNN's may be relu).
bool recurrence_fusable(const Node& n);

// Every ai.onnx.preview::FlexAttention with a score_mod or prob_mod graph
// becomes ONNX ops with the mods' nodes spliced in (flex_attention.cc):
// Q·Kᵀ·scale, score_mod, Softmax, prob_mod, MatMul with V. One that cannot
// (dtypes or head counts not known) stays, and the lowering refuses it.
// Returns the nodes expanded.
int expand_flex_attention_mods(Graph& graph);

// Graph input name -> the values it is fixed to (ember convert --fix-input).
using FixedInputs = std::map<std::string, std::vector<double>>;

// Makes each named graph input a constant and drops it from graph.inputs:
// int64 (or any integer or bool dtype: the input's own) for integer inputs,
// the input's float dtype for float ones; the shape is the input's declared
// one (a scalar for rank 0); one dim that is not static is inferred from the
// count of values. Errors (InvalidArgument): an unknown input (the inputs are
// listed), a count the shape does not hold, a non-integral value for an
// integer input, a shape with more than one dim not static.
Diag fix_inputs(Graph& graph, const FixedInputs& fixed);

// Graph input name -> its dims (ember convert --input-shape NAME=D,D,...).
using InputShapes = std::map<std::string, std::vector<int64_t>>;

// Gives each named graph input these static dims (it stays an input): Shape
// sub-graphs on it fold, and so do the Ifs whose conditions test its dims
// (torch's squeeze(dim) exported on a dynamic dim). Errors (InvalidArgument):
// an unknown input, another rank, a dim that contradicts a static one, a
// negative dim.
Diag fix_input_shapes(Graph& graph, const InputShapes& shapes);

// Identity removal, shape and constant folding, If inlining (conditions that
// are constants) and dead-node elimination until nothing changes, then BatchNorm folding, MatMul bias fusion,
// attention scale folding, sibling Gemm merging, attention fusion, activation fusion, LayerNorm and GELU
// fusion, Conv1d to Conv2d, dead-node elimination and Graph::compact().
// fuse_matmul_biases false: MatMuls stay MatMuls (dynamic int8 quantizing
// MatMuls but not Gemms, --quantize-ops MatMul, must still find them) and
// no attention scale is folded (weights keep their values).
// merge_gemms false: no sibling Gemms merged (int8 weights quantized per
// tensor: a merged weight would share one scale).
Expected<PassReport> run_passes(Graph& graph, bool fuse_matmul_biases = true, bool merge_gemms = true);

}  // namespace ember::converter
