// Writes valid `.ember` files into a directory: the seed corpus of loader_fuzz.
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/model/writer.h"

using namespace ember;

namespace {

TensorDef make_tensor(std::string name, std::vector<int64_t> shape, DType dtype, size_t data_bytes, bool weight) {
  TensorDef t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.has_data = weight;
  t.data.assign(data_bytes, std::byte{3});
  return t;
}

OpDef make_op(OpKind kind, std::vector<int32_t> in, std::vector<int32_t> out, OpParams params = NoParams{}) {
  OpDef op;
  op.op = kind;
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  op.name = std::string(op_name(kind));
  op.params = params;
  return op;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  std::vector<ModelDef> defs(6);
  {  // MLP-like with a symbolic batch, a quantized weight and metadata.
    ModelDef& d = defs[0];
    TensorDef x = make_tensor("x", {-1, 4}, DType::Float32, 0, false);
    x.dim_names = {"batch", ""};
    d.add_tensor(x);
    TensorDef w = make_tensor("w", {4, 3}, DType::Int8, 12, true);
    w.quant = QuantDef{{0.5f, 0.25f, 1.f}, {0, 1, 2}, 1, ActivationQuant::PerRow};  // the per-row field too
    d.add_tensor(w);
    d.add_tensor(make_tensor("h", {-1, 3}, DType::Float32, 0, false));
    d.add_tensor(make_tensor("y", {-1, 3}, DType::Float32, 0, false));
    d.inputs = {0};
    d.outputs = {3};
    d.ops.push_back(make_op(OpKind::MatMul, {0, 1}, {2}));
    d.ops.push_back(make_op(OpKind::Gelu, {2}, {3}, GeluParams{true}));
    d.metadata.producer = "fuzz_seeds";
    d.metadata.converter_options = {{"k", "v"}};
  }
  {  // Conv + pool + pad, a sparse COO weight.
    ModelDef& d = defs[1];
    d.add_tensor(make_tensor("x", {1, 2, 5, 5}, DType::Float32, 0, false));
    d.add_tensor(make_tensor("w", {2, 2, 3, 3}, DType::Float16, 72, true));
    TensorDef sp = make_tensor("sp", {2, 3}, DType::Float32, 8, true);
    sp.sparse = SparseCooDef{3, 2};
    d.add_tensor(sp);
    TensorDef idx = make_tensor("sp.idx", {2, 2}, DType::Int64, 0, true);
    const int64_t coords[4] = {0, 1, 2, 0};
    idx.data.resize(32);
    std::memcpy(idx.data.data(), coords, 32);
    d.add_tensor(idx);
    d.add_tensor(make_tensor("c", {1, 2, 3, 3}, DType::Float32, 0, false));
    d.add_tensor(make_tensor("p", {1, 2, 2, 2}, DType::Float32, 0, false));
    d.add_tensor(make_tensor("y", {1, 2, 4, 4}, DType::Float32, 0, false));
    d.inputs = {0};
    d.outputs = {6};
    d.ops.push_back(make_op(OpKind::Conv2d, {0, 1, -1}, {4}, Conv2dParams{}));
    Pool2dParams pool;
    pool.kernel[0] = pool.kernel[1] = 2;
    d.ops.push_back(make_op(OpKind::MaxPool2d, {4}, {5}, pool));
    PadParams pad;
    pad.before[2] = pad.after[3] = 1;
    d.ops.push_back(make_op(OpKind::Pad, {5}, {6}, pad));
  }
  {  // Scalars, clamp, reductions, a bool weight.
    ModelDef& d = defs[2];
    d.add_tensor(make_tensor("x", {3}, DType::Float64, 0, false));
    d.add_tensor(make_tensor("m", {3}, DType::Bool, 3, true));
    d.add_tensor(make_tensor("f", {3}, DType::Float64, 0, false));
    d.add_tensor(make_tensor("c", {3}, DType::Float64, 0, false));
    d.add_tensor(make_tensor("s", {1}, DType::Float64, 0, false));
    d.inputs = {0};
    d.outputs = {4};
    d.ops.push_back(make_op(OpKind::Fill, {}, {2}, ScalarParams{Scalar(2.5)}));
    ClampParams clamp;
    clamp.has_max = true;
    clamp.max = Scalar(int64_t{1});
    d.ops.push_back(make_op(OpKind::Clamp, {0}, {3}, clamp));
    d.ops.push_back(make_op(OpKind::Sum, {3}, {4}, ReduceParams{1, 1, 2.0}));
  }
  {  // Linear with a sparse fp32 weight, int16 COO indices (what --sparse-coo writes).
    ModelDef& d = defs[3];
    d.add_tensor(make_tensor("x", {-1, 6}, DType::Float32, 0, false));
    TensorDef w = make_tensor("fc.weight", {4, 6}, DType::Float32, 0, true);
    const float values[5] = {0.5f, -1.f, 2.f, 0.25f, -3.f};
    w.data.resize(sizeof(values));
    std::memcpy(w.data.data(), values, sizeof(values));
    w.sparse = SparseCooDef{2, 5};
    d.add_tensor(w);
    TensorDef idx = make_tensor("fc.weight.indices", {2, 5}, DType::Int16, 0, true);
    const int16_t coords[10] = {0, 0, 1, 3, 3, 1, 5, 2, 0, 4};
    idx.data.resize(sizeof(coords));
    std::memcpy(idx.data.data(), coords, sizeof(coords));
    d.add_tensor(idx);
    d.add_tensor(make_tensor("fc.bias", {4}, DType::Float32, 16, true));
    d.add_tensor(make_tensor("y", {-1, 4}, DType::Float32, 0, false));
    d.inputs = {0};
    d.outputs = {4};
    d.ops.push_back(make_op(OpKind::Linear, {0, 1, 3}, {4}, LinearParams{}));
  }
  {  // Sparse int8 values with per-channel scales, int32 indices, and a 3-D fp16 COO weight.
    ModelDef& d = defs[4];
    d.add_tensor(make_tensor("x", {2, 3}, DType::Float32, 0, false));
    TensorDef w = make_tensor("q", {3, 3}, DType::Int8, 3, true);
    w.quant = QuantDef{{0.5f, 0.25f, 2.f}, {0, 0, 1}, 0};
    w.sparse = SparseCooDef{2, 3};
    d.add_tensor(w);
    TensorDef idx = make_tensor("q.indices", {2, 3}, DType::Int32, 0, true);
    const int32_t coords[6] = {0, 1, 2, 2, 0, 1};
    idx.data.resize(sizeof(coords));
    std::memcpy(idx.data.data(), coords, sizeof(coords));
    d.add_tensor(idx);
    TensorDef h = make_tensor("h", {2, 2, 2}, DType::Float16, 4, true);
    h.sparse = SparseCooDef{4, 2};
    d.add_tensor(h);
    TensorDef hidx = make_tensor("h.indices", {3, 2}, DType::Int64, 0, true);
    const int64_t hc[6] = {0, 1, 1, 0, 0, 1};
    hidx.data.resize(sizeof(hc));
    std::memcpy(hidx.data.data(), hc, sizeof(hc));
    d.add_tensor(hidx);
    d.add_tensor(make_tensor("y", {2, 3}, DType::Float32, 0, false));
    d.inputs = {0};
    d.outputs = {5};
    d.ops.push_back(make_op(OpKind::Linear, {0, 1, -1}, {5}, LinearParams{}));
  }
  {  // Control flow: a Loop whose body (subgraph 1) runs an If (subgraph 0 both ways) with a weight.
    ModelDef& d = defs[5];
    d.add_tensor(make_tensor("n", {}, DType::Int64, 8, true));
    d.add_tensor(make_tensor("x", {3}, DType::Float32, 0, false));
    d.add_tensor(make_tensor("y", {3}, DType::Float32, 0, false));
    d.add_tensor(make_tensor("ys", {-1, 3}, DType::Float32, 0, false));
    d.inputs = {1};
    d.outputs = {2, 3};
    d.ops.push_back(make_op(OpKind::Loop, {0, -1, 1}, {2, 3}, LoopParams{1, 1}));
    ModelDef branch;  // (a) -> a + w
    branch.add_tensor(make_tensor("a", {3}, DType::Float32, 0, false));
    branch.add_tensor(make_tensor("w", {3}, DType::Float32, 12, true));
    branch.add_tensor(make_tensor("b", {3}, DType::Float32, 0, false));
    branch.inputs = {0};
    branch.outputs = {2};
    branch.ops.push_back(make_op(OpKind::Add, {0, 1}, {2}));
    ModelDef body;  // (i, cond, acc) -> (cond, If(cond, acc), acc)
    body.add_tensor(make_tensor("i", {}, DType::Int64, 0, false));
    body.add_tensor(make_tensor("cond", {}, DType::Bool, 0, false));
    body.add_tensor(make_tensor("acc", {3}, DType::Float32, 0, false));
    body.add_tensor(make_tensor("acc_out", {3}, DType::Float32, 0, false));
    body.inputs = {0, 1, 2};
    body.outputs = {1, 3, 2};
    body.ops.push_back(make_op(OpKind::If, {1, 2}, {3}, IfParams{0, 0}));
    d.subgraphs = {branch, body};
  }
  for (size_t k = 0; k < defs.size(); ++k) {
    std::string error;
    const std::string path = std::string(argv[1]) + "/seed" + std::to_string(k) + ".ember";
    if (write_model(defs[k], path, &error) != Status::Ok) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
      return 1;
    }
  }
  return 0;
}
