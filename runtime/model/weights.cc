// Weight preparation at create (weights.h): conversions through the tensor
// layer's Status-returning cores, failures reported with the weight's name.
#include "runtime/model/weights.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "quant/coo.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/model/model_access.h"
#include "runtime/ops/dispatch.h"

namespace ember {

std::vector<TensorState> tensor_states(const Model& m) {
  std::vector<TensorState> tensors(static_cast<size_t>(m.num_tensors()));
  for (int k = 0; k < m.num_ops(); ++k) {
    const auto* in = m.op(k).inputs();
    for (uint32_t j = 0; j < vlen(in); ++j) {
      const int32_t t = in->Get(j);
      if (t >= 0 && t < m.num_tensors()) tensors[static_cast<size_t>(t)].last_use = k;
    }
  }
  for (int32_t t : m.outputs()) {
    if (t >= 0 && t < m.num_tensors()) tensors[static_cast<size_t>(t)].last_use = m.num_ops();
  }
  return tensors;
}

namespace {

// What Backend::prepare_weight reads for one weight: the WeightDesc's arrays,
// owned here (desc() points into them).
struct WeightSource {
  Tensor weight, indices, bias;  // contiguous
  std::vector<float> scales;
  std::vector<int64_t> zero_points;
  bool per_channel = false, per_row_activations = false;
  Conv2dParams conv;
  int64_t rows = 0, cols = 0;

  WeightDesc desc() const {
    WeightDesc d;
    d.weight = weight.kernel_view();
    if (indices.defined()) d.indices = indices.kernel_view();
    if (bias.defined()) d.bias = bias.kernel_view();
    d.scales = scales.data();
    d.num_scales = scales.size();
    d.zero_points = zero_points.data();
    d.num_zero_points = zero_points.size();
    d.per_channel = per_channel;
    d.per_row_activations = per_row_activations;
    d.conv = conv;
    d.rows = rows;
    d.cols = cols;
    return d;
  }
};

// The op runs the prepared weight `w`: its params point to it.
void use_prepared(OpState& op, std::shared_ptr<const PreparedWeight> w) {
  if (auto* p = std::get_if<QLinearParams>(&op.params)) p->weight = w.get();
  if (auto* p = std::get_if<QConv2dParams>(&op.params)) p->weight = w.get();
  if (auto* p = std::get_if<Conv2dParams>(&op.params)) p->weight = w.get();
  if (auto* p = std::get_if<LinearParams>(&op.params)) p->weight = w.get();
  op.prepared = std::move(w);
}

// Whether every reader of sparse tensor t is a Linear reading it as its weight.
bool read_only_as_linear_weight(const Model& m, int t) {
  if (m.tensor_shape(t).size() != 2) return false;
  for (int k = 0; k < m.num_ops(); ++k) {
    const auto* in = m.op(k).inputs();
    for (uint32_t j = 0; j < vlen(in); ++j) {
      if (in->Get(j) == t && !(m.op_kind(k) == OpKind::Linear && j == 1)) return false;
    }
  }
  for (int32_t o : m.outputs()) {
    if (o == t) return false;
  }
  return true;
}

// What Backend::prepare_weight reads for a sparse weight t (only Linears read it).
Status sparse_source(const Model& m, int t, WeightSource& src, std::string* error) {
  const fb::SparseCoo* sp = m.tensor(t).sparse();
  const int32_t ii = sp->indices();  // checked by Verification::Full; Minimal files too:
  if (ii < 0 || ii >= m.num_tensors() || !m.weight(ii).defined())
    return report_error(error, Status::InvalidModel, "sparse weight '", m.tensor_name(t), "': COO indices tensor ",
                        ii, " is not a weight");
  const std::vector<int64_t> shape = m.tensor_shape(t);
  const fb::QuantParams* q = m.tensor(t).quant();
  if (q != nullptr) {
    if (q->scales() != nullptr) src.scales.assign(q->scales()->begin(), q->scales()->end());
    if (q->zero_points() != nullptr) src.zero_points.assign(q->zero_points()->begin(), q->zero_points()->end());
  }
  if (m.weight(t).dtype() == DType::Int8 && src.scales.size() > 1 && q->axis() != 0)
    return report_error(error, Status::NotSupported, "sparse weight '", m.tensor_name(t),
                        "': int8 values quantized along axis ", q->axis(),
                        " (the SpMM kernel takes per-output-channel scales, axis 0)");
  Result<Tensor> weight = core::contiguous(m.weight(t));
  Result<Tensor> indices = weight.ok() ? core::contiguous(m.weight(ii)) : Result<Tensor>(weight.status());
  if (!indices.ok())
    return report_error(error, indices.status(), "sparse weight '", m.tensor_name(t), "': ",
                        failure_message(indices.status()));
  src.weight = std::move(*weight);
  src.indices = std::move(*indices);
  src.rows = shape[0];
  src.cols = shape[1];
  return Status::Ok;
}

Status prepare_sparse_tensor(const Model& m, int t, TensorState& state, std::string* error) {
  if (read_only_as_linear_weight(m, t)) {
    WeightSource src;
    EMBER_TRY(sparse_source(m, t, src, error));
    Backend* cpu = get_backend(DeviceType::CPU);
    Result<std::shared_ptr<const PreparedWeight>> r = cpu->prepare_weight(OpKind::SparseLinear, src.desc());
    if (!r.ok()) return report_error(error, r.status(), "sparse weight '", m.tensor_name(t), "': ", cpu->last_error());
    state.prepared_sparse = std::move(r.get());
    return Status::Ok;
  }
  const Tensor& values = m.weight(t);
  if (values.dtype() == DType::Int8)
    return report_error(error, Status::NotSupported, "sparse weight '", m.tensor_name(t),
                        "': int8 sparse values are only supported as a Linear weight");
  const int32_t ii = m.tensor(t).sparse()->indices();
  if (ii < 0 || ii >= m.num_tensors() || !m.weight(ii).defined())
    return report_error(error, Status::InvalidModel, "sparse weight '", m.tensor_name(t), "': COO indices tensor ",
                        ii, " is not a weight");
  NoGradGuard no_grad;
  Result<Tensor> dense = sparse::core::coo_to_dense(m.weight(ii), values, m.tensor_shape(t));
  if (!dense.ok())
    return report_error(error, dense.status(), "sparse weight '", m.tensor_name(t), "': ",
                        failure_message(dense.status()));
  state.densified = std::move(*dense);
  return Status::Ok;
}

}  // namespace

Status prepare_sparse(const Model& m, std::vector<OpState>& ops, std::vector<TensorState>& tensors,
                      std::string* error) {
  for (int t = 0; t < m.num_tensors(); ++t) {
    TensorState& state = tensors[static_cast<size_t>(t)];
    if (m.tensor(t).sparse() == nullptr || state.last_use < 0) continue;
    EMBER_TRY(prepare_sparse_tensor(m, t, state, error));
  }
  // The Linears reading a prepared sparse weight run as SparseLinear.
  for (int k = 0; k < m.num_ops(); ++k) {
    const auto* in = m.op(k).inputs();
    if (m.op_kind(k) != OpKind::Linear || vlen(in) < 2 || in->Get(1) < 0) continue;
    const TensorState& w = tensors[static_cast<size_t>(in->Get(1))];
    if (w.prepared_sparse == nullptr) continue;
    OpState& op = ops[static_cast<size_t>(k)];
    QLinearParams p;
    p.activation = std::get<LinearParams>(op.params).activation;
    op.kind = OpKind::SparseLinear;
    op.params = p;
    use_prepared(op, w.prepared_sparse);
  }
  return Status::Ok;
}

// `ember convert --weights fp16` stores float32 weights as float16 (metadata
// converter option weights=fp16): each one read by an op is converted back to
// float32 once here (like the densified sparse weights), so the ops run in
// float32. Packed sparse weights are not touched: pack_csr already turned fp16
// values into float32 (and keeps symmetric int8 values as int8 with per-row scales).
Status upcast_fp16_weights(const Model& m, std::vector<TensorState>& tensors, std::string* error) {
  bool fp16 = false;
  for (const auto& kv : m.metadata().converter_options) fp16 = fp16 || (kv.first == "weights" && kv.second == "fp16");
  if (!fp16) return Status::Ok;
  NoGradGuard no_grad;
  for (int t = 0; t < m.num_tensors(); ++t) {
    TensorState& state = tensors[static_cast<size_t>(t)];
    if (state.last_use < 0 || state.prepared_sparse != nullptr) continue;
    const Tensor& w = state.densified.defined() ? state.densified : m.weight(t);
    if (!w.defined() || w.dtype() != DType::Float16) continue;
    Result<Tensor> to32 = core::to(w, DType::Float32);
    Result<Tensor> wide = to32.ok() ? core::contiguous(*to32) : Result<Tensor>(to32.status());
    if (!wide.ok())
      return report_error(error, wide.status(), "weight '", m.tensor_name(t), "' to float32: ",
                          failure_message(wide.status()));
    state.densified = std::move(*wide);
  }
  return Status::Ok;
}

namespace {

// What op k's int8 weight is (a Linear or Conv2d reading a dense int8 weight), checked.
Status quantized_source(const Model& m, int k, const OpParams& params, WeightSource& src, std::string* error) {
  const bool is_conv = m.op_kind(k) == OpKind::Conv2d;
  const auto* in = m.op(k).inputs();
  const int32_t wi = in->Get(1);
  const std::string where = str_cat("operator ", k, " ", op_ref(m, k));
  const Tensor& w = m.weight(wi);
  const fb::QuantParams* q = m.tensor(wi).quant();
  if (!w.defined() || q == nullptr || w.dim() != (is_conv ? 4 : 2))
    return report_error(error, Status::NotSupported, where, ": an int8 weight must be a ", is_conv ? "4" : "2",
                        "-D constant with quantization parameters");
  if (is_conv && std::get<Conv2dParams>(params).groups != 1)
    return report_error(error, Status::NotSupported, where, ": int8 convolutions need groups = 1");
  const int64_t n = w.size(0);
  const uint32_t ns = vlen(q->scales());
  if (!(ns == 1 || (q->axis() == 0 && ns == static_cast<uint32_t>(n))))
    return report_error(error, Status::NotSupported, where, ": int8 weight scales must be per tensor or per",
                        " output channel (axis 0)");
  for (uint32_t j = 0; j < vlen(q->zero_points()); ++j) {
    if (q->zero_points()->Get(j) != 0)
      return report_error(error, Status::NotSupported, where,
                          ": int8 weights must be symmetric (zero points 0) for dynamic quantization");
  }
  const int32_t bi = vlen(in) > 2 ? in->Get(2) : -1;
  if (bi >= 0) {
    const Tensor& b = m.weight(bi);
    if (!b.defined() || b.dtype() != DType::Float32 || b.dim() != 1 || b.size(0) != n)
      return report_error(error, Status::NotSupported, where,
                          ": the bias of an int8 Linear must be a float32 constant [", n, "]");
    src.bias = b;
  }
  // Activations per tensor (files without the field) or per row (Linear only).
  const fb::ActivationQuant act = q->activations();
  if (act != fb::ActivationQuant::PerTensor && act != fb::ActivationQuant::PerRow)
    return report_error(error, Status::NotSupported, where, ": unknown activation quantization ",
                        static_cast<int>(act));
  src.per_row_activations = act == fb::ActivationQuant::PerRow;
  if (is_conv && src.per_row_activations)
    return report_error(error, Status::NotSupported, where,
                        ": per-row activation quantization is supported for int8 Linear only (Conv2d: per tensor)");
  src.weight = w;
  src.scales.assign(q->scales()->begin(), q->scales()->end());
  src.per_channel = ns > 1 || (ns == 1 && q->axis() == 0 && n == 1);
  if (is_conv) src.conv = std::get<Conv2dParams>(params);
  return Status::Ok;
}

// Packs op k's int8 weight on the CPU; the op becomes a QLinear / QConv2d.
Status prepare_quantized_op(const Model& m, int k, OpState& op, std::string* error) {
  WeightSource src;
  EMBER_TRY(quantized_source(m, k, op.params, src, error));
  const bool is_conv = m.op_kind(k) == OpKind::Conv2d;
  const OpKind kind = is_conv ? OpKind::QConv2d : OpKind::QLinear;
  Result<std::shared_ptr<const PreparedWeight>> r = get_backend(DeviceType::CPU)->prepare_weight(kind, src.desc());
  if (!r.ok())
    return report_error(error, r.status(), "operator ", k, " ", op_ref(m, k), ": preparing the int8 weight failed (",
                        status_name(r.status()), ")");
  m.release(src.weight);  // the packed copy is what runs
  op.kind = kind;
  if (is_conv) {
    QConv2dParams p;
    p.conv = std::get<Conv2dParams>(op.params);
    op.params = p;
  } else {
    QLinearParams p;
    p.activation = std::get<LinearParams>(op.params).activation;
    p.per_row_activations = src.per_row_activations;
    op.params = p;
  }
  use_prepared(op, std::move(r.get()));
  return Status::Ok;
}

}  // namespace

Status prepare_quantized(const Model& m, std::vector<OpState>& ops, std::string* error) {
  for (int k = 0; k < m.num_ops(); ++k) {
    const OpKind kind = m.op_kind(k);
    if (kind != OpKind::Linear && kind != OpKind::Conv2d) continue;
    const auto* in = m.op(k).inputs();
    if (vlen(in) < 2) continue;
    const int32_t wi = in->Get(1);
    // Sparse int8 weights go through SpMM (prepare_sparse).
    if (wi < 0 || m.tensor_dtype(wi) != DType::Int8 || m.tensor(wi).sparse() != nullptr) continue;
    EMBER_TRY(prepare_quantized_op(m, k, ops[static_cast<size_t>(k)], error));
  }
  return Status::Ok;
}

namespace {

// The float32 weight op k's kernel reads packed (the GEMM's constant operand
// of a Conv2d with groups 1, a Linear, a MatMul with a constant 2-D second
// input; a depthwise Conv2d's weight for channels_last activations), or undefined.
Tensor gemm_weight(const Model& m, int k, const OpState& op, const std::vector<TensorState>& tensors) {
  const auto* in = m.op(k).inputs();
  const auto* conv = std::get_if<Conv2dParams>(&op.params);
  const bool is_conv = op.kind == OpKind::Conv2d && conv != nullptr && (conv->groups == 1 || op.channels_last);
  const bool is_linear = op.kind == OpKind::Linear && std::holds_alternative<LinearParams>(op.params);
  const bool is_matmul = op.kind == OpKind::MatMul;
  if (!(is_conv || is_linear || is_matmul) || vlen(in) < 2) return Tensor();
  const int32_t wi = in->Get(1);
  if (wi < 0 || wi >= m.num_tensors() || m.tensor(wi).sparse() != nullptr) return Tensor();
  const TensorState& state = tensors[static_cast<size_t>(wi)];
  const Tensor& w = state.densified.defined() ? state.densified : m.weight(wi);
  if (!w.defined() || w.dtype() != DType::Float32 || w.dim() != (is_conv ? 4 : 2) || !w.is_contiguous() ||
      w.numel() == 0)
    return Tensor();
  if (is_conv && conv->groups != 1 && (w.size(1) != 1 || w.size(0) != conv->groups)) return Tensor();  // not depthwise
  return w;
}

}  // namespace

Status prepare_packed(const Model& m, std::vector<OpState>& ops, const std::vector<TensorState>& tensors, bool bf16,
                      std::string* error) {
  Backend* cpu = get_backend(DeviceType::CPU);
  // By weight data, op kind and activation layout: a weight several ops read is packed once.
  std::map<std::tuple<const void*, OpKind, bool>, std::shared_ptr<const PreparedWeight>> packed;
  for (int k = 0; k < m.num_ops(); ++k) {
    OpState& op = ops[static_cast<size_t>(k)];
    const Tensor w = gemm_weight(m, k, op, tensors);
    op.bf16 = bf16 && op.kind == OpKind::MatMul && !w.defined();  // a product of two activations
    if (auto* a = std::get_if<AttentionParams>(&op.params)) a->bf16 = bf16;  // its two products, as op.bf16's
    if (!w.defined()) continue;
    std::shared_ptr<const PreparedWeight>& p = packed[{w.data_ptr(), op.kind, op.channels_last}];
    if (p == nullptr) {
      WeightSource src;
      src.weight = w;
      WeightDesc desc = src.desc();
      if (const auto* conv = std::get_if<Conv2dParams>(&op.params)) {  // the output's size, where the model fixes it
        desc.conv = *conv;
        const std::vector<int64_t> out = m.tensor_shape(m.op(k).outputs()->Get(0));
        if (out.size() == 4 && out[2] > 0 && out[3] > 0) {
          desc.out_h = out[2];
          desc.out_w = out[3];
        }
      }
      // Packed at its first use; then the packed copy is what runs. The
      // model outlives the executor's prepared weights.
      desc.release_source = [&m, w] { m.release(w); };
      desc.bf16 = bf16;
      desc.channels_last = op.channels_last;
      Result<std::shared_ptr<const PreparedWeight>> r = cpu->prepare_weight(op.kind, desc);
      if (!r.ok())
        return report_error(error, r.status(), "operator ", k, " ", op_ref(m, k), ": packing the weight failed: ",
                            cpu->last_error());
      p = std::move(r.get());
    }
    use_prepared(op, p);
  }
  return Status::Ok;
}

std::string prepare_for_device(const Model& m, int k, Backend& backend, OpState& op) {
  WeightSource src;
  std::string error;
  const int32_t wi = m.op(k).inputs()->Get(1);
  const Status st = op.kind == OpKind::SparseLinear ? sparse_source(m, wi, src, &error)
                                                    : quantized_source(m, k, op.params, src, &error);
  if (st != Status::Ok) return error;
  Result<std::shared_ptr<const PreparedWeight>> r = backend.prepare_weight(op.kind, src.desc());
  if (r.status() == Status::NotSupported)
    return str_cat(op.kind == OpKind::SparseLinear ? "sparse COO " : "dynamic int8 ", op_name(m.op_kind(k)),
                   " is not implemented for ", backend.name());
  if (!r.ok())
    return str_cat("preparing the ", op_name(op.kind), " weight for ", backend.name(), " failed: ",
                   backend.last_error());
  use_prepared(op, std::move(r.get()));
  return std::string();
}

Status upload_weights(const Model& m, const ExecutorOptions& options, const std::vector<OpState>& ops,
                      std::vector<TensorState>& tensors, std::string* error) {
  const Device device(options.device);
  NoGradGuard no_grad;
  for (int k = 0; k < m.num_ops(); ++k) {
    const OpState& op = ops[static_cast<size_t>(k)];
    if (op.placement != Placement::Device) continue;
    const OpKind kind = m.op_kind(k);
    const auto* in = m.op(k).inputs();
    for (uint32_t j = 0; j < vlen(in); ++j) {
      const int32_t t = in->Get(j);
      if (t < 0 || reads_on_host(kind, j) || !m.weight(t).defined()) continue;
      if (j == 1 && op.prepared != nullptr) continue;  // prepared for the device (placement)
      TensorState& state = tensors[static_cast<size_t>(t)];
      if (state.device_weight.defined()) continue;
      const Tensor& w = state.densified.defined() ? state.densified : m.weight(t);
      const bool narrow = options.precision != Precision::Float32 && w.dtype() == DType::Float32;
      Result<Tensor> low = core::to(w, narrow ? device_float_dtype(options.precision) : w.dtype());
      Result<Tensor> up = low.ok() ? core::to(*low, device) : Result<Tensor>(low.status());
      if (!up.ok())
        return report_error(error, up.status(), "uploading weight '", m.tensor_name(t), "' to ", device, ": ",
                            failure_message(up.status()));
      state.device_weight = std::move(*up);
    }
  }
  return Status::Ok;
}

// ExecutorOptions::adapters: each on a Linear op (run as Linear or QLinear)
// whose weight is [out, in], A float32 [r, in], B float32 [out, r], one per op.
Status check_adapters(const Model& m, const std::vector<OpState>& ops,
                      const std::vector<std::pair<int, LoraAdapter>>& adapters, std::string* error) {
  std::vector<bool> seen(static_cast<size_t>(m.num_ops()), false);
  for (const auto& [k, a] : adapters) {
    if (k < 0 || k >= m.num_ops())
      return report_error(error, Status::InvalidArgument, "LoRA adapter on op ", k, ": the model has ", m.num_ops(),
                          " ops");
    const OpKind kind = ops[static_cast<size_t>(k)].kind;
    if (kind != OpKind::Linear && kind != OpKind::QLinear)
      return report_error(error, Status::NotSupported, "LoRA adapter on ", op_ref(m, k), ": runs as ", op_name(kind),
                          " (adapters go on float32 or int8 Linear layers)");
    if (seen[static_cast<size_t>(k)])
      return report_error(error, Status::InvalidArgument, "two LoRA adapters on ", op_ref(m, k));
    seen[static_cast<size_t>(k)] = true;
    const std::vector<int64_t> w = m.tensor_shape(m.op(k).inputs()->Get(1));
    const bool fits = a.a.defined() && a.b.defined() && a.a.dtype() == DType::Float32 &&
                      a.b.dtype() == DType::Float32 && a.a.dim() == 2 && a.b.dim() == 2 && w.size() == 2 &&
                      a.a.size(1) == w[1] && a.b.size(0) == w[0] && a.b.size(1) == a.a.size(0);
    if (!fits)
      return report_error(error, Status::ShapeMismatch, "LoRA adapter on ", op_ref(m, k), ": A ",
                          a.a.defined() ? shape_str(a.a.sizes()) : "(none)", ", B ",
                          a.b.defined() ? shape_str(a.b.sizes()) : "(none)", " do not fit its weight ", shape_str(w),
                          " (A float32 [rank, in], B float32 [out, rank])");
  }
  return Status::Ok;
}

}  // namespace ember
