#include "kernels/vulkan/quant_linear.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/vk_kernels.h"
#include "runtime/core/error.h"

namespace ember::vk {

// --- device arrays -------------------------------------------------------------------

DeviceArray& DeviceArray::operator=(DeviceArray&& o) noexcept {
  std::swap(address_, o.address_);
  std::swap(numel_, o.numel_);
  std::swap(dtype_, o.dtype_);
  return *this;
}

DeviceArray::~DeviceArray() {
  if (address_ == 0) return;
  Result<Context*> c = Context::get();
  if (c.ok()) c.get()->release(address_, bytes());
}

Result<DeviceArray> DeviceArray::upload(const void* src, int64_t count, DType dtype) {
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  DeviceArray a;
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  EMBER_ASSIGN_OR_RETURN(a.address_, c->allocate(bytes));
  a.numel_ = count;
  a.dtype_ = dtype;
  EMBER_TRY(c->upload(a.address_, src, bytes));
  return a;
}

TensorView DeviceArray::view() const {
  TensorView v;
  if (address_ == 0) return v;
  v.data = reinterpret_cast<void*>(address_);
  v.dtype = dtype_;
  v.rank = 1;
  v.sizes[0] = numel_;
  v.strides[0] = 1;
  return v;
}

QuantLinearTestOptions& quant_linear_test_options() {
  static QuantLinearTestOptions options;
  return options;
}

namespace {

Status failed(Status s, const std::string& why) {
  Context::set_why(why);
  return s;
}

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

struct ActPush {
  uint32_t kind = 0;
  float lo = 0.0f, hi = 0.0f;
};
ActPush act_push(const Activation& a) {
  ActPush p;
  p.kind = static_cast<uint32_t>(a.kind);  // the shaders' act: 0 none, 1 relu, 2 clamp, 3 hardswish
  p.lo = static_cast<float>(a.min);
  p.hi = static_cast<float>(a.max);
  return p;
}

constexpr int64_t kMaxGroups = 65535;
constexpr int64_t kScratchAlign = 256;

// The push constants of each shader (std430: 32-bit members in shader order).
struct MinMaxPush {
  uint32_t m, k, x_first, x_row_stride, x_col_stride, params_first, per_row;
  float qmax;
};
struct ParamsPush {
  uint32_t m, params_first;
  float qmax;
};
struct QuantizePush {
  uint32_t m, k, k4, x_first, x_row_stride, x_col_stride, params_first, q_first, per_row;
  float qmax;
};
struct GemmPush {
  uint32_t m, n, k4, row0, q_first, params_first, w_first, rowsum_first, wscale_first, bias_first, y_first,
      per_row, w_per_channel, has_bias, act;
  float act_lo, act_hi;
  uint32_t raw;
};
struct SpmmPush {
  uint32_t m, n, row0, col0, x_first, x_row_stride, x_col_stride, row_ptr_first, col_first, val_first,
      row_scale_first, bias_first, y_first, int8, has_bias, act;
  float act_lo, act_hi;
};

// x [..., K] as rows: a rank-2 view [m, K] (row stride, column stride) on the
// same memory; false (why set) when its leading dims do not collapse into one
// row stride (the front-ends pass contiguous inputs).
bool as_rows(const TensorView& x, int64_t k, const char* what, TensorView* rows) {
  if (x.rank < 1 || x.sizes[x.rank - 1] != k || x.dtype != DType::Float32) {
    Context::set_why(str_cat(what, ": expected a float32 input [..., ", k, "]"));
    return false;
  }
  int64_t row_stride = -1, expect = -1;
  for (int d = x.rank - 2; d >= 0; --d) {
    if (x.sizes[d] == 1) continue;
    if (row_stride < 0) {
      row_stride = x.strides[d];
    } else if (x.strides[d] != expect) {
      Context::set_why(str_cat(what, ": the input's leading dimensions do not collapse into rows"));
      return false;
    }
    expect = x.strides[d] * x.sizes[d];
  }
  *rows = x;
  rows->rank = 2;
  rows->sizes[0] = k > 0 ? x.numel() / k : 0;
  rows->sizes[1] = k;
  rows->strides[0] = row_stride < 0 ? k : row_stride;  // a single row
  rows->strides[1] = x.strides[x.rank - 1];
  return true;
}

// The scratch a QLinear of m rows needs: q (Int32 [m, k4]), then params
// (Float32 [(m + 1) * 4]) at the next 256-byte boundary.
int64_t q_bytes(int64_t m, int64_t k4) { return (m * k4 * 4 + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }

TensorView scratch_view(void* base, int64_t byte_offset, DType dtype, int64_t n) {
  TensorView v;
  v.data = reinterpret_cast<void*>(reinterpret_cast<uint64_t>(base) + static_cast<uint64_t>(byte_offset));
  v.dtype = dtype;
  v.rank = 1;
  v.sizes[0] = n;
  v.strides[0] = 1;
  return v;
}

// The GEMM and its epilogue (raw: int32 sums) into y, contiguous [m, n].
Status gemm(const TensorView& q, const TensorView& params, int64_t m, const VkQuantLinear& w, const TensorView& y,
            bool per_row, const Activation& act, bool raw) {
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  const bool dot = quant_linear_test_options().use_dot_product && c->caps().integer_dot_product;
  constexpr int64_t kTileRows = 4, kTileCols = 64;
  const ActPush a = act_push(act);
  for (int64_t row0 = 0; row0 < m; row0 += kMaxGroups * kTileRows) {
    Dispatch d(dot ? shaders::qlinear_gemm_dot : shaders::qlinear_gemm);
    GemmPush p{};
    p.q_first = d.bind(q);
    p.params_first = d.bind(params);
    p.w_first = d.bind(w.weight.view());
    p.rowsum_first = d.bind(w.row_sums.view());
    p.wscale_first = d.bind(w.scales.view());
    p.bias_first = d.bind_or(w.bias.view(), w.scales.view());
    p.y_first = d.bind(y);
    p.m = u32(m);
    p.n = u32(w.out_features);
    p.k4 = u32(w.k4);
    p.row0 = u32(row0);
    p.per_row = per_row ? 1u : 0u;
    p.w_per_channel = w.per_channel ? 1u : 0u;
    p.has_bias = w.bias.defined() ? 1u : 0u;
    p.act = a.kind;
    p.act_lo = a.lo;
    p.act_hi = a.hi;
    p.raw = raw ? 1u : 0u;
    const int64_t rows = std::min(m - row0, kMaxGroups * kTileRows);
    EMBER_TRY(d.run(p, groups(w.out_features, kTileCols), groups(rows, kTileRows), 1));
  }
  return Status::Ok;
}

const VkQuantLinear* quant_weight(const OpParams& params) {
  const auto* p = std::get_if<QLinearParams>(&params);
  return p != nullptr ? dynamic_cast<const VkQuantLinear*>(p->weight) : nullptr;
}

}  // namespace

Status quantize_activations(const TensorView& x2d, const TensorView& q, const TensorView& params, bool per_row) {
  const int64_t m = x2d.sizes[0], k = x2d.sizes[1], k4 = q.numel() / std::max<int64_t>(m, 1);
  if (m == 0) return Status::Ok;
  const QuantLinearTestOptions& o = quant_linear_test_options();
  const uint32_t sk = o.skew_division ? 1u : 0u;
  const float qmax = o.reduce_range ? 127.0f : 255.0f;
  {
    Dispatch d(shaders::qlinear_minmax);
    MinMaxPush p{};
    p.x_first = d.bind(x2d);
    p.params_first = d.bind(params);
    p.m = u32(m);
    p.k = u32(k);
    p.x_row_stride = u32(x2d.strides[0]);
    p.x_col_stride = u32(x2d.strides[1]);
    p.per_row = per_row ? 1u : 0u;
    p.qmax = qmax;
    const Grid g = grid(m, 1);
    EMBER_TRY(d.run(p, g.x, g.y, 1, {256, sk}));
  }
  if (!per_row) {
    Dispatch d(shaders::qlinear_params);
    ParamsPush p{};
    p.params_first = d.bind(params);
    p.m = u32(m);
    p.qmax = qmax;
    EMBER_TRY(d.run(p, 1, 1, 1, {256, sk}));
  }
  Dispatch d(shaders::qlinear_quantize);
  QuantizePush p{};
  p.x_first = d.bind(x2d);
  p.params_first = d.bind(params);
  p.q_first = d.bind(q);
  p.m = u32(m);
  p.k = u32(k);
  p.k4 = u32(k4);
  p.x_row_stride = u32(x2d.strides[0]);
  p.x_col_stride = u32(x2d.strides[1]);
  p.per_row = per_row ? 1u : 0u;
  p.qmax = qmax;
  const Grid g = grid(m * k4, 256);
  return d.run(p, g.x, g.y, 1, {256, sk});
}

Status quant_linear_accumulators(const TensorView& q, const VkQuantLinear& w, const TensorView& acc) {
  const int64_t m = q.rank > 0 ? q.sizes[0] : 0;
  if (q.dtype != DType::Int32 || q.numel() != m * w.k4 || acc.numel() != m * w.out_features)
    return failed(Status::ShapeMismatch, str_cat("quant_linear_accumulators: expected int32 [m, ", w.k4, "]"));
  if (m == 0) return Status::Ok;
  // The params are unused by the raw sums; any float buffer binds.
  return gemm(q, w.scales.view(), m, w, acc, false, Activation{}, /*raw=*/true);
}

size_t qlinear_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams& params) {
  const VkQuantLinear* w = quant_weight(params);
  if (w == nullptr || in.size() < 1 || w->in_features == 0) return 0;
  const int64_t m = in[0].numel() / w->in_features;
  return static_cast<size_t>(q_bytes(m, w->k4) + (m + 1) * 16);
}

// in: x float32 [*, K] (leading dims with one row stride), (weight, bias: in
// the prepared weight); out: y float32 [*, N] contiguous. 4 dispatches (3 per row).
Status qlinear(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const VkQuantLinear* w = quant_weight(params);
  if (w == nullptr || in.size() < 1 || out.size() != 1)
    return failed(Status::InvalidArgument, "int8 linear on vulkan: no weight prepared for vulkan");
  TensorView x;
  if (!as_rows(in[0], w->in_features, "int8 linear", &x)) return Status::InvalidArgument;
  const int64_t m = x.sizes[0];
  if (!out[0].is_contiguous() || out[0].numel() != m * w->out_features || out[0].dtype != DType::Float32)
    return failed(Status::InvalidArgument, "int8 linear on vulkan: the output must be float32 contiguous");
  if (m == 0) return Status::Ok;
  if (ctx.scratch == nullptr || ctx.scratch_bytes < qlinear_workspace(in, {}, params))
    return failed(Status::InvalidArgument, "int8 linear on vulkan: no scratch");
  const bool per_row = std::get<QLinearParams>(params).per_row_activations;
  const TensorView q = scratch_view(ctx.scratch, 0, DType::Int32, m * w->k4);
  const TensorView qp = scratch_view(ctx.scratch, q_bytes(m, w->k4), DType::Float32, (m + 1) * 4);
  EMBER_TRY(quantize_activations(x, q, qp, per_row));
  return gemm(q, qp, m, *w, out[0], per_row, std::get<QLinearParams>(params).activation, /*raw=*/false);
}

// in: x float32 [*, K] (as qlinear), (weight), bias float32 [N] or absent;
// out: y float32 [*, N] contiguous = act(x @ W^T + bias).
Status sparse_linear(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                     const OpParams& params) {
  const auto* p = std::get_if<QLinearParams>(&params);
  const auto* w = p != nullptr ? dynamic_cast<const VkSparseLinear*>(p->weight) : nullptr;
  if (w == nullptr || in.size() < 1 || out.size() != 1)
    return failed(Status::InvalidArgument, "sparse linear on vulkan: no weight prepared for vulkan");
  TensorView x;
  if (!as_rows(in[0], w->cols, "sparse linear", &x)) return Status::InvalidArgument;
  const TensorView bias = in.size() > 2 ? in[2] : TensorView{};
  if (bias.data != nullptr && (bias.dtype != DType::Float32 || bias.numel() != w->rows))
    return failed(Status::InvalidArgument, str_cat("sparse linear: expected a float32 bias [", w->rows, "]"));
  const int64_t m = w->rows > 0 ? out[0].numel() / w->rows : 0;  // x's rows (also when K = 0)
  if (!out[0].is_contiguous() || out[0].numel() != m * w->rows || out[0].dtype != DType::Float32 ||
      (w->cols > 0 && x.sizes[0] != m))
    return failed(Status::InvalidArgument, "sparse linear on vulkan: the output must be float32 contiguous");
  constexpr int64_t kRowsPerGroup = 4;
  const ActPush a = act_push(p->activation);
  for (int64_t row0 = 0; row0 < m; row0 += kMaxGroups * kRowsPerGroup) {
    for (int64_t col0 = 0; col0 < w->rows; col0 += kMaxGroups) {
      Dispatch d(shaders::spmm);
      SpmmPush s{};
      s.x_first = d.bind_or(w->cols > 0 ? x : TensorView{}, w->row_ptr.view());  // K = 0: x is never read
      s.row_ptr_first = d.bind(w->row_ptr.view());
      s.col_first = d.bind(w->col.view());
      s.val_first = d.bind(w->values.view());
      s.row_scale_first = d.bind_or(w->row_scale.view(), w->row_ptr.view());
      s.bias_first = d.bind_or(bias, w->row_ptr.view());
      s.y_first = d.bind(out[0]);
      s.m = u32(m);
      s.n = u32(w->rows);
      s.row0 = u32(row0);
      s.col0 = u32(col0);
      s.x_row_stride = u32(x.strides[0]);
      s.x_col_stride = u32(x.strides[1]);
      s.int8 = w->int8 ? 1u : 0u;
      s.has_bias = bias.data != nullptr ? 1u : 0u;
      s.act = a.kind;
      s.act_lo = a.lo;
      s.act_hi = a.hi;
      const int64_t rows = std::min(m - row0, kMaxGroups * kRowsPerGroup);
      const int64_t cols = std::min(w->rows - col0, kMaxGroups);
      EMBER_TRY(d.run(s, u32(cols), groups(rows, kRowsPerGroup), 1, {64}));
    }
  }
  return Status::Ok;
}

// --- packing ---------------------------------------------------------------------------

Result<std::shared_ptr<const VkQuantLinear>> pack_quant_linear(const int8_t* q, int64_t out, int64_t in,
                                                               const float* scales, bool per_channel,
                                                               const float* bias) {
  if (out <= 0 || in <= 0 || in > (int64_t{1} << 24) || q == nullptr || scales == nullptr)
    return failed(Status::InvalidArgument, str_cat("int8 linear on vulkan: bad weight [", out, ", ", in,
                                                   "] (sizes must be positive, in <= 2^24)"));
  auto w = std::make_shared<VkQuantLinear>();
  w->out_features = out;
  w->in_features = in;
  w->k4 = (in + 3) / 4;
  w->per_channel = per_channel;
  w->shape = {out, in};
  w->device = DeviceType::Vulkan;
  std::vector<uint32_t> words(static_cast<size_t>(out * w->k4), 0u);
  std::vector<int32_t> sums(static_cast<size_t>(out), 0);
  for (int64_t j = 0; j < out; ++j) {
    for (int64_t p = 0; p < in; ++p) {
      const int8_t v = q[j * in + p];
      sums[static_cast<size_t>(j)] += v;
      words[static_cast<size_t>(j * w->k4 + p / 4)] |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * (p % 4));
    }
  }
  EMBER_ASSIGN_OR_RETURN(w->weight, DeviceArray::upload(words.data(), out * w->k4, DType::Int32));
  EMBER_ASSIGN_OR_RETURN(w->row_sums, DeviceArray::upload(sums.data(), out, DType::Int32));
  EMBER_ASSIGN_OR_RETURN(w->scales, DeviceArray::upload(scales, per_channel ? out : 1, DType::Float32));
  if (bias != nullptr) {
    EMBER_ASSIGN_OR_RETURN(w->bias, DeviceArray::upload(bias, out, DType::Float32));
  }
  return std::shared_ptr<const VkQuantLinear>(std::move(w));
}

Result<std::shared_ptr<const VkSparseLinear>> pack_sparse_linear(const sparse::CsrMatrix& a) {
  const int64_t nnz = a.nnz();
  const bool sizes_ok = static_cast<int64_t>(a.row_ptr.size()) == a.rows + 1 &&
                        (a.int8 ? static_cast<int64_t>(a.qvalues.size()) == nnz &&
                                      static_cast<int64_t>(a.row_scale.size()) == a.rows
                                : static_cast<int64_t>(a.values.size()) == nnz);
  if (a.rows <= 0 || a.cols < 0 || nnz >= (int64_t{1} << 31) || !sizes_ok || a.row_ptr[0] != 0 ||
      a.row_ptr[static_cast<size_t>(a.rows)] != nnz)
    return failed(Status::InvalidArgument, str_cat("sparse linear on vulkan: bad CSR matrix [", a.rows, ", ",
                                                   a.cols, "] with ", nnz, " nonzeros"));
  auto s = std::make_shared<VkSparseLinear>();
  s->rows = a.rows;
  s->cols = a.cols;
  s->nnz = nnz;
  s->int8 = a.int8;
  s->shape = {a.rows, a.cols};
  s->device = DeviceType::Vulkan;
  const std::vector<int32_t> row_ptr(a.row_ptr.begin(), a.row_ptr.end());
  std::vector<int32_t> col(static_cast<size_t>(std::max<int64_t>(nnz, 1)), 0);
  for (int64_t e = 0; e < nnz; ++e) {
    const int64_t cc = a.narrow ? a.col16[static_cast<size_t>(e)] : a.col32[static_cast<size_t>(e)];
    if (cc < 0 || cc >= a.cols)
      return failed(Status::InvalidArgument, str_cat("sparse linear on vulkan: column ", cc, " of nonzero ", e,
                                                     " is outside [0, ", a.cols, ")"));
    col[static_cast<size_t>(e)] = static_cast<int32_t>(cc);
  }
  EMBER_ASSIGN_OR_RETURN(s->row_ptr, DeviceArray::upload(row_ptr.data(), a.rows + 1, DType::Int32));
  EMBER_ASSIGN_OR_RETURN(s->col, DeviceArray::upload(col.data(), static_cast<int64_t>(col.size()), DType::Int32));
  if (s->int8) {
    std::vector<uint32_t> words(static_cast<size_t>(std::max<int64_t>((nnz + 3) / 4, 1)), 0u);
    for (int64_t e = 0; e < nnz; ++e)
      words[static_cast<size_t>(e / 4)] |= static_cast<uint32_t>(static_cast<uint8_t>(a.qvalues[static_cast<size_t>(e)]))
                                           << (8 * (e % 4));
    EMBER_ASSIGN_OR_RETURN(s->values, DeviceArray::upload(words.data(), static_cast<int64_t>(words.size()), DType::Int32));
    EMBER_ASSIGN_OR_RETURN(s->row_scale, DeviceArray::upload(a.row_scale.data(), a.rows, DType::Float32));
  } else {
    std::vector<float> values(col.size(), 0.0f);
    std::copy(a.values.begin(), a.values.end(), values.begin());
    EMBER_ASSIGN_OR_RETURN(s->values, DeviceArray::upload(values.data(), static_cast<int64_t>(values.size()), DType::Float32));
  }
  return std::shared_ptr<const VkSparseLinear>(std::move(s));
}

Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w) {
  if (op == OpKind::SparseLinear) {
    const std::vector<float> scales(w.scales, w.scales + (w.scales != nullptr ? w.num_scales : 0));
    const std::vector<int64_t> zero_points(w.zero_points,
                                           w.zero_points + (w.zero_points != nullptr ? w.num_zero_points : 0));
    sparse::CsrMatrix csr;
    std::string why;
    const Status st = sparse::pack_csr(w.indices, w.weight, w.rows, w.cols, scales, zero_points, &csr, &why,
                                       /*blocked=*/false);
    if (st != Status::Ok) return failed(st, why);
    EMBER_ASSIGN_OR_RETURN(std::shared_ptr<const VkSparseLinear> s, pack_sparse_linear(csr));
    return std::shared_ptr<const PreparedWeight>(std::move(s));
  }
  if (op != OpKind::QLinear) return Status::NotSupported;
  if (w.weight.data == nullptr || w.weight.dtype != DType::Int8 || w.weight.rank != 2 || !w.weight.is_contiguous())
    return failed(Status::InvalidArgument, "int8 linear on vulkan: the weight must be a contiguous int8 [N, K]");
  const float* bias = w.bias.data != nullptr ? w.bias.ptr<const float>() : nullptr;
  EMBER_ASSIGN_OR_RETURN(std::shared_ptr<const VkQuantLinear> q,
                      pack_quant_linear(w.weight.ptr<const int8_t>(), w.weight.sizes[0], w.weight.sizes[1], w.scales,
                                        w.per_channel, bias));
  return std::shared_ptr<const PreparedWeight>(std::move(q));
}

}  // namespace ember::vk
