// ONNX importer: reads a .onnx file (what torch.onnx.export writes) into the
// converter IR (converter/ir.h).
//
// - Default-domain opsets 7 to 28; any other opset is an error naming it.
// - Initializers (raw_data or the typed fields, little-endian) of float,
//   float16, bfloat16, double, int64, int32, int16, int8, uint8 and bool become
//   constant values; so do Constant nodes. Other dtypes and external data are
//   errors.
// - Graph inputs and outputs keep their dims; dim_param becomes a symbolic Dim
//   ("batch"). ONNX shape inference (libonnx, with data propagation) runs on
//   the model first, so every value gets a dtype and a shape where ONNX can
//   tell; value_info already in the file is kept. Dims ONNX cannot compute
//   (its generated symbols "unk__3") are unknown dims (Dim{}), which
//   infer_missing_shapes() (passes.h) fills in where it can.
// - If, Loop and Scan keep their GRAPH attributes as subgraphs (Node::graphs,
//   nested to any depth up to 32): each subgraph's initializers, Constant
//   nodes and nodes are imported like the model's; a name a subgraph does not
//   define resolves in the enclosing scopes (ONNX lexical scoping) and becomes
//   an explicit capture (the node's last inputs, Node::captured). The passes
//   inline an If whose condition folds (inline_constant_ifs); what is left
//   becomes ember If / Loop / Scan ops (lower_control.cc).
// - Every op outside supported_onnx_ops() (subgraphs included) is collected first: the error lists
//   them all at once (op type, count, node names) and no graph is returned.
// - Node forms are normalized whatever the opset: "axes" of Unsqueeze,
//   Squeeze and every Reduce* op and "split" of Split are always inputs
//   (attributes in older opsets become constant int64 inputs); so are Pad's
//   "pads" and "value" (< 11), Clip's "min" and "max" (< 11) and Slice's
//   "starts", "ends" and "axes" (< 10). Softmax and LogSoftmax below opset 13
//   get an explicit "axis" and, unless it is the last dim, the attribute
//   "coerce_2d" = 1 (the old flatten-to-2D semantics). Refused at import:
//   BatchNormalization "spatial" = 0 (< 9), Dropout with a training_mode
//   input that is not a constant false (>= 12).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "converter/ir.h"

namespace onnx {
class ModelProto;
}

namespace ember::converter {

inline constexpr int64_t kMinOnnxOpset = 7;
inline constexpr int64_t kMaxOnnxOpset = 28;
// The newest opset libonnx 1.12's shape inference knows (see infer_shapes).
inline constexpr int64_t kLibOnnxOpset = 17;

// The ONNX op types the importer accepts (default domain): those of the
// converter's ONNX op table (converter/lower.cc).
const std::vector<std::string>& supported_onnx_ops();

// Runs ONNX shape inference on `model` in place (what import_onnx does first;
// converter/onnx_infer.cc). Returns false, leaving `model` unchanged, when
// inference throws or the model is not given to libonnx because it would
// crash it: a node its schema does not verify (a Scan without "body"), a
// stride, dilation, kernel_shape, group or blocksize below 1, an undefined or
// untyped value, a subgraph, or model-local functions.
bool infer_shapes(onnx::ModelProto& model);

// The ember dtype of an ONNX TensorProto.DataType code (Cast's "to"), or none
// for the types ember does not have (strings, complex, uint16/32/64, float8).
std::optional<DType> dtype_from_onnx(int64_t code);
// The name of an ONNX dtype code ("FLOAT8E4M3FN"; "code 99" when unknown).
std::string onnx_dtype_name(int64_t code);

// Imports the model at `path`. Errors: IoError (missing or unreadable file),
// InvalidModel (not ONNX, truncated, missing initializer, malformed tensor),
// NotSupported (opset, dtype, op types).
Expected<Graph> import_onnx(const std::string& path);
// The same from the serialized bytes; `source` names them in messages.
Expected<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source);

}  // namespace ember::converter
