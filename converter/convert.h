// `ember convert`: ONNX file -> optimized IR -> ModelDef -> `.ember` file.
//
// lower() turns the optimized IR into a ModelDef of ember ops (ops.def): each
// ONNX node becomes one op (Gemm becomes Linear, Transpose Permute, Shape
// ShapeOf, Cast a Copy into a tensor of the target dtype, ...) whose
// attributes become the op's params; constant inputs that must be attributes
// (Unsqueeze axes, ReduceMean axes, Clip bounds, Pad pads) are read at
// conversion. What cannot be lowered (a Gemm with alpha != 1, a Pad with
// non-constant pads, ...) is listed all at once, with node names, like the
// importer's unsupported ops.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "converter/ir.h"
#include "converter/passes.h"
#include "runtime/model/model_def.h"

namespace ember::converter {

// Options of `ember convert`.
struct ConvertOptions {
  bool optimize = true;           // run_passes()
  // Graph inputs fixed to constants before the passes (fix_inputs, passes.h:
  // --fix-input NAME=V[,V...]): they leave the model's inputs, and an If whose
  // condition depends on them only (silero-vad's sample rate) is inlined.
  FixedInputs fixed_inputs;
  // Static dims for graph inputs (fix_input_shapes, passes.h: --input-shape
  // NAME=D,D,...), applied before fixed_inputs.
  InputShapes input_shapes;
  std::string quantize;           // "" (none) or "dynamic-int8" (converter/quantize.cc)
  // Weights of Linear/MatMul/Conv whose fraction of zeros reaches
  // sparse_min_zero_fraction are stored as sparse COO (converter/sparsify.cc).
  bool sparse_coo = false;
  double sparse_min_zero_fraction = 0.5;
  // Magnitude pruning before storing: "" (none) or
  // "magnitude:FRACTION[:OP_TYPES]" (quant/prune.h; default op types Gemm, MatMul).
  std::string prune;
  // "" / "fp32": float32 weights stay float32; "fp16": the float32 constants
  // left after quantization (not the biases of int8 ops) are stored as float16
  // and upcast once by Executor::create.
  std::string weights;
  // Accuracy report (converter/report.h): per-layer SNR against fp32 on the
  // calibration inputs (an .npz or a directory of NAME.npy; "" : random).
  bool report = false;
  std::string calibration_inputs;
  // Layers whose SNR is below this stay fp32 (implies the measurement).
  std::optional<double> min_snr;

  // Gemms of one input (attention's q, k and v projections) merged into one
  // wider Gemm and a Split (merge_sibling_gemms, passes.h); false
  // (--keep-projections): each keeps its own weight, for --train / LoRA
  // patterns that name one of them. Never with per_tensor int8 weights.
  bool merge_projections = true;
  // dynamic-int8: symmetric int8 weights, per output channel unless per_tensor.
  bool per_tensor = false;
  // dynamic-int8: weights within [-64, 64] (7 bits, as ONNX Runtime's
  // quantize_dynamic(reduce_range=True)): coarser, but on AVX2 without VNNI the
  // int8 GEMM can then use vpmaddubsw, exact there (kernels/cpu/qgemm.h).
  // Needs `quantize`.
  bool reduce_range = false;
  // dynamic-int8: how the input of each int8 Linear is quantized at run time:
  // per tensor (PyTorch's and ONNX Runtime's scheme) or per row (one scale and
  // zero point per row of x: rows of very different ranges lose less). Stored
  // on the weight's quantization parameters; Conv layers stay per tensor.
  // Needs `quantize`.
  ActivationQuant activations = ActivationQuant::PerTensor;
  // ONNX op types whose constant weights are quantized: "Gemm" (ember Linear),
  // "MatMul" (a constant 2-D right operand: becomes a Linear with weight [N, K]),
  // "Conv" (when asked; groups = 1 only, input quantized per tensor at run time).
  std::vector<std::string> quantize_ops = {"MatMul", "Gemm"};
  int64_t min_weight_elements = 0;  // smaller weights stay fp32
  std::vector<std::string> exclude;  // node names left in fp32

  // The options as (key, value) pairs for the file's metadata.
  std::vector<std::pair<std::string, std::string>> as_metadata() const;
};

// One weight the pruning or sparse COO options looked at (convert_file's
// per-layer sparsity table).
struct SparseLayerReport {
  std::string op;            // node name
  std::string op_type;       // ember op (linear, matmul, conv2d)
  std::string weight;        // tensor name
  std::vector<int64_t> shape;
  double zero_fraction = 0;  // after pruning
  bool pruned = false;
  bool coo = false;          // stored as sparse COO
  int64_t bytes_before = 0;  // dense bytes
  int64_t bytes_after = 0;   // stored bytes (values + indices when COO)
};

// What quantize_weights() did.
struct QuantizeReport {
  int quantized = 0;           // weights converted to int8
  int64_t bytes_before = 0;    // their fp32 bytes
  int64_t bytes_after = 0;     // their int8 bytes (scales are metadata)
  std::vector<std::string> nodes;  // node names of the quantized ops
};

// One layer of the accuracy report (converter/report.h).
struct LayerAccuracy {
  std::string op;        // node name
  std::string op_type;   // ember op of the converted layer
  std::string storage;   // "int8", "fp16", "int8+coo", "pruned", ...
  int64_t bytes_before = 0;  // fp32 bytes of its constant inputs
  int64_t bytes_after = 0;   // converted bytes (COO indices included)
  double zero_fraction = 0;  // of its weight (input 1) after conversion
  double zero_fraction_fp32 = 0;  // the same before
  double snr_db = 0;         // its output alone vs fp32 (+inf when exact)
  bool kept_fp32 = false;    // below min_snr: restored to fp32
};

struct AccuracyReport {
  std::string inputs;  // where the inputs came from
  std::vector<LayerAccuracy> layers;
  int64_t weight_bytes_fp32 = 0;   // every constant of the fp32 model
  int64_t weight_bytes_after = 0;  // of the written model
  std::vector<std::pair<std::string, double>> output_snr_db;  // per float graph output
  bool min_snr_set = false;
  double min_snr = 0;
};

struct ConvertReport {
  PassReport passes;
  QuantizeReport quantize;
  int onnx_nodes = 0;   // nodes imported
  int ops = 0;          // ops written
  int tensors = 0;
  int64_t weight_bytes = 0;  // every tensor with data, the subgraphs' included
  std::string source_hash;  // "sha256:<hex>" of the ONNX file
  std::vector<SparseLayerReport> sparse_layers;  // with prune or sparse_coo
  std::vector<std::string> warnings;              // e.g. pruning loses accuracy
  bool has_accuracy = false;  // with options.report or options.min_snr
  AccuracyReport accuracy;
};

// converter/sparsify.cc. prune_weights: zeroes the smallest |w| of each weight
// of the ops options.prune names (after lowering: Gemm -> linear; MatMul ->
// matmul and linear, MatMul+Add fuse into linear; Conv -> conv2d), adds a
// warning and the per-layer rows. store_sparse_coo: rewrites each weight of a
// linear/matmul/conv2d whose zero fraction reaches the threshold as COO
// (quant/coo.h; int16 indices when every dim <= 32768), filling bytes_after.
Diag prune_weights(ModelDef& def, const std::string& spec, ConvertReport* report);
Diag store_sparse_coo(ModelDef& def, double min_zero_fraction, ConvertReport* report);
// The per-layer table ("layer  op  weight  shape  zeros  stored  bytes").
std::string sparse_table(const ConvertReport& report);

// options.weights == "fp16": every float32 constant without quantization or
// COO is stored as float16, except the biases of ops with an int8 weight (the
// int8 kernels take a float32 bias). Returns the number converted in *count.
Diag convert_weights_fp16(ModelDef& def, int* count = nullptr);

// IR -> ModelDef (graph inputs/outputs, tensors with shapes, dim names and
// dtypes, ops in order, node names; constants of float dtype read as weights
// by Conv/Gemm/MatMul/LayerNorm/Gather (data) and BatchNorm's scale and bias
// are marked trainable; running statistics are not). Every value an op or the
// graph reads needs a known rank and dtype (dtypes the IR lacks are inferred:
// comparisons bool, Shape int64, Cast its target, others the first input's).
// All problems are returned at once: NotSupported, "the graph cannot be
// lowered to ember ops (N problems): <Op> '<node>': <reason>; ...".
Expected<ModelDef> lower(const Graph& graph);


// options.quantize == "dynamic-int8": rewrites `def` in place. The weight of
// each Linear (ONNX Gemm) and each MatMul with a constant 2-D float32 weight
// (read by that op only) with at least min_weight_elements elements, whose
// node is not excluded, becomes an int8 tensor with a QuantDef (per channel
// along axis 0, or per tensor), quantized by quant/qscheme.h (PyTorch's
// formulas); a MatMul becomes a Linear (weight stored transposed, [N, K]).
// Linear weights carry options.activations (per tensor or per row).
// With "Conv" in quantize_ops, the weights of Conv2d ops with groups = 1 too
// (4-D, per channel along axis 0 or per tensor; activations per tensor).
// Errors: InvalidArgument for an unknown scheme or op type, and for per-row
// activations without a quantization scheme.
Diag quantize_weights(ModelDef& def, const ConvertOptions& options, QuantizeReport* report = nullptr);

// Imports `onnx_path`, optimizes (options.optimize), lowers and writes
// `out_path` atomically (nothing is written on error). Metadata: producer
// "ember", version "0.1", "sha256:<hex>" of the ONNX bytes (OpenSSL) and
// options.as_metadata() (plus min_snr when set). With options.report or
// options.min_snr the conversion is measured against the fp32 model
// (converter/report.h; report->accuracy). Order: prune, quantize, fp16, COO,
// measure (and restore the layers below min_snr), write.
Diag convert_file(const std::string& onnx_path, const std::string& out_path,
                  const ConvertOptions& options, ConvertReport* report = nullptr);

}  // namespace ember::converter
