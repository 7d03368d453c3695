#include "kernels/vulkan/quant_linear.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/vulkan/dispatch.h"
#include "runtime/core/error.h"

namespace ember::vk {
namespace {

const Device kDevice("vulkan");

// Raises the kernel's failure with the context's explanation.
void check(Status st, const char* what) {
  if (st != Status::Ok) raise_error(st, str_cat(what, " on vulkan: ", Context::why()));
}

// x [..., K] as rows: a rank-2 view [m, K] (row stride, column stride) on the
// same memory; x is made contiguous first when its leading dims do not
// collapse into one.
struct Rows {
  Tensor keep;  // the tensor the view points into
  TensorView view;
  int64_t m = 0;
  Shape out_shape;
};

Rows as_rows(const Tensor& x, int64_t k, int64_t n, const char* what) {
  EMBER_CHECK(x.defined() && x.device().type() == DeviceType::Vulkan, Status::InvalidArgument, what,
              ": expected a Vulkan tensor");
  EMBER_CHECK(x.dtype() == DType::Float32, Status::DTypeMismatch, what, ": expected a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_CHECK(x.dim() >= 1 && x.size(-1) == k, Status::ShapeMismatch, what, ": the input's last dimension ",
              x.dim() >= 1 ? x.size(-1) : 0, " does not match the weight's ", k);
  Rows r;
  r.out_shape = x.sizes();
  r.out_shape.back() = n;
  r.m = k > 0 ? x.numel() / k : 0;
  // One stride for the collapsed leading dims (size-1 dims are free).
  int64_t row_stride = -1, expect = -1;
  bool collapses = true;
  for (int64_t d = x.dim() - 2; d >= 0; --d) {
    if (x.size(d) == 1) continue;
    if (row_stride < 0) {
      row_stride = x.stride(d);
    } else if (x.stride(d) != expect) {
      collapses = false;
    }
    expect = x.stride(d) * x.size(d);
  }
  r.keep = collapses ? x : x.contiguous();
  if (!collapses) row_stride = k;
  if (row_stride < 0) row_stride = k;  // a single row
  r.view = r.keep.kernel_view();
  r.view.rank = 2;
  r.view.sizes[0] = r.m;
  r.view.sizes[1] = k;
  r.view.strides[0] = row_stride;
  r.view.strides[1] = r.keep.stride(-1);
  return r;
}

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

struct ActPush {
  uint32_t kind = 0;
  float lo = 0.0f, hi = 0.0f;
};
ActPush act_push(const Activation& a) {
  ActPush p;
  p.kind = a.kind == ActivationKind::Relu ? 1u : (a.kind == ActivationKind::Clamp ? 2u : 0u);
  p.lo = static_cast<float>(a.min);
  p.hi = static_cast<float>(a.max);
  return p;
}

constexpr int64_t kMaxGroups = 65535;

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

// Quantizes the rows of `x` (a rank-2 view) into q / params.
void quantize_rows(const TensorView& x, int64_t m, int64_t k, int64_t k4, bool per_row, bool reduce_range,
                   bool skew, const Tensor& q, const Tensor& params) {
  const uint32_t sk = skew ? 1u : 0u;
  const float qmax = reduce_range ? 127.0f : 255.0f;
  const TensorView pv = params.kernel_view();
  {
    Dispatch d(shaders::qlinear_minmax);
    MinMaxPush p{};
    p.x_first = d.bind(x);
    p.params_first = d.bind(pv);
    p.m = u32(m);
    p.k = u32(k);
    p.x_row_stride = u32(x.strides[0]);
    p.x_col_stride = u32(x.strides[1]);
    p.per_row = per_row ? 1u : 0u;
    p.qmax = qmax;
    const Grid g = grid(m, 1);
    check(d.run(p, g.x, g.y, 1, {256, sk}), "dynamic int8 linear (min/max)");
  }
  if (!per_row) {
    Dispatch d(shaders::qlinear_params);
    ParamsPush p{};
    p.params_first = d.bind(pv);
    p.m = u32(m);
    p.qmax = qmax;
    check(d.run(p, 1, 1, 1, {256, sk}), "dynamic int8 linear (quantization parameters)");
  }
  Dispatch d(shaders::qlinear_quantize);
  QuantizePush p{};
  p.x_first = d.bind(x);
  p.params_first = d.bind(pv);
  p.q_first = d.bind(q.kernel_view());
  p.m = u32(m);
  p.k = u32(k);
  p.k4 = u32(k4);
  p.x_row_stride = u32(x.strides[0]);
  p.x_col_stride = u32(x.strides[1]);
  p.per_row = per_row ? 1u : 0u;
  p.qmax = qmax;
  const Grid g = grid(m * k4, 256);
  check(d.run(p, g.x, g.y, 1, {256, sk}), "dynamic int8 linear (quantize)");
}

// The GEMM and its epilogue (raw: int32 sums) into y, contiguous [m, n].
void gemm(const Tensor& q, const Tensor& params, int64_t m, const VkQuantLinear& w, const Tensor& y, bool per_row,
          const Activation& act, bool raw, bool use_dot) {
  Result<Context*> c = Context::get();
  check(c.status(), "dynamic int8 linear");
  const bool dot = use_dot && c.get()->caps().integer_dot_product;
  constexpr int64_t kTileRows = 4, kTileCols = 64;
  const ActPush a = act_push(act);
  for (int64_t row0 = 0; row0 < m; row0 += kMaxGroups * kTileRows) {
    Dispatch d(dot ? shaders::qlinear_gemm_dot : shaders::qlinear_gemm);
    GemmPush p{};
    p.q_first = d.bind(q.kernel_view());
    p.params_first = d.bind(params.kernel_view());
    p.w_first = d.bind(w.weight.kernel_view());
    p.rowsum_first = d.bind(w.row_sums.kernel_view());
    p.wscale_first = d.bind(w.scales.kernel_view());
    p.bias_first = d.bind_or(w.bias.defined() ? w.bias.kernel_view() : TensorView{}, w.scales.kernel_view());
    p.y_first = d.bind(y.kernel_view());
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
    check(d.run(p, groups(w.out_features, kTileCols), groups(rows, kTileRows), 1), "dynamic int8 linear (gemm)");
  }
}

template <typename T>
Tensor upload(const std::vector<T>& v, DType dtype) {
  return from_blob(const_cast<T*>(v.data()), {static_cast<int64_t>(v.size())}, TensorOptions(dtype)).to(kDevice);
}

}  // namespace

Result<VkQuantLinear> pack_quant_linear(const int8_t* q, int64_t out, int64_t in, const float* scales,
                                        bool per_channel, const float* bias) {
  if (out <= 0 || in <= 0 || in > (int64_t{1} << 24) || q == nullptr || scales == nullptr) {
    Context::set_why(str_cat("int8 linear on vulkan: bad weight [", out, ", ", in, "] (sizes must be positive, in <= 2^24)"));
    return Status::InvalidArgument;
  }
  Result<Context*> c = Context::get();
  if (!c.ok()) return c.status();
  VkQuantLinear w;
  w.out_features = out;
  w.in_features = in;
  w.k4 = (in + 3) / 4;
  w.per_channel = per_channel;
  std::vector<uint32_t> words(static_cast<size_t>(out * w.k4), 0u);
  std::vector<int32_t> sums(static_cast<size_t>(out), 0);
  for (int64_t j = 0; j < out; ++j) {
    for (int64_t p = 0; p < in; ++p) {
      const int8_t v = q[j * in + p];
      sums[static_cast<size_t>(j)] += v;
      words[static_cast<size_t>(j * w.k4 + p / 4)] |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * (p % 4));
    }
  }
  try {
    w.weight = upload(words, DType::Int32).reshape({out, w.k4});
    w.row_sums = upload(sums, DType::Int32);
    w.scales = upload(std::vector<float>(scales, scales + (per_channel ? out : 1)), DType::Float32);
    if (bias != nullptr) w.bias = upload(std::vector<float>(bias, bias + out), DType::Float32);
  } catch (const Error& e) {
    Context::set_why(str_cat("int8 linear on vulkan: ", e.what()));
    return e.status();
  }
  return w;
}

QuantizedActivations quantize_activations(const Tensor& x2d, int64_t k4, bool per_row, bool reduce_range,
                                          bool skew_division) {
  const int64_t k = x2d.dim() >= 1 ? x2d.size(-1) : 0;
  const Rows r = as_rows(x2d, k, k, "quantize_activations");
  QuantizedActivations qa;
  qa.q = empty({r.m, k4}, TensorOptions(DType::Int32).device(kDevice));
  qa.params = zeros({(r.m + 1) * 4}, TensorOptions(DType::Float32).device(kDevice));
  if (r.m > 0) quantize_rows(r.view, r.m, k, k4, per_row, reduce_range, skew_division, qa.q, qa.params);
  return qa;
}

Tensor quant_linear_accumulators(const Tensor& q, const VkQuantLinear& w, bool use_dot_product) {
  EMBER_CHECK(q.dtype() == DType::Int32 && q.dim() == 2 && q.size(1) == w.k4 && q.is_contiguous(),
              Status::ShapeMismatch, "quant_linear_accumulators: expected contiguous int32 [m, ", w.k4, "]");
  const int64_t m = q.size(0);
  Tensor acc = empty({m, w.out_features}, TensorOptions(DType::Int32).device(kDevice));
  if (m == 0) return acc;
  // The params are unused by the raw sums; any float tensor binds.
  gemm(q, w.scales, m, w, acc, false, Activation{}, /*raw=*/true, use_dot_product);
  return acc;
}

Tensor dynamic_quant_linear(const Tensor& x, const VkQuantLinear& w, const Activation& act, bool per_row,
                            const QuantLinearOptions& options) {
  const Rows r = as_rows(x, w.in_features, w.out_features, "int8 linear");
  Tensor y = empty(r.out_shape, TensorOptions(DType::Float32).device(kDevice));
  if (r.m == 0) return y;
  const Tensor q = empty({r.m, w.k4}, TensorOptions(DType::Int32).device(kDevice));
  const Tensor params = empty({(r.m + 1) * 4}, TensorOptions(DType::Float32).device(kDevice));
  quantize_rows(r.view, r.m, w.in_features, w.k4, per_row, options.reduce_range, options.skew_division, q, params);
  gemm(q, params, r.m, w, y, per_row, act, /*raw=*/false, options.use_dot_product);
  return y;
}

Result<VkSparseLinear> pack_sparse_linear_arrays(const CsrArrays& a) {
  if (a.rows <= 0 || a.cols <= 0 || a.nnz < 0 || a.nnz >= (int64_t{1} << 31) || a.row_ptr == nullptr ||
      (a.qvalues != nullptr && a.row_scale == nullptr) || (a.nnz > 0 && a.values == nullptr && a.qvalues == nullptr) ||
      (a.nnz > 0 && a.col16 == nullptr && a.col32 == nullptr) || a.row_ptr[0] != 0 || a.row_ptr[a.rows] != a.nnz) {
    Context::set_why(str_cat("sparse linear on vulkan: bad CSR matrix [", a.rows, ", ", a.cols, "] with ", a.nnz,
                             " nonzeros"));
    return Status::InvalidArgument;
  }
  Result<Context*> c = Context::get();
  if (!c.ok()) return c.status();
  VkSparseLinear s;
  s.rows = a.rows;
  s.cols = a.cols;
  s.nnz = a.nnz;
  s.int8 = a.qvalues != nullptr;
  std::vector<int32_t> row_ptr(a.row_ptr, a.row_ptr + a.rows + 1);
  std::vector<int32_t> col(static_cast<size_t>(std::max<int64_t>(s.nnz, 1)), 0);
  for (int64_t e = 0; e < s.nnz; ++e) {
    const int64_t cc = a.col16 != nullptr ? a.col16[e] : a.col32[e];
    if (cc < 0 || cc >= a.cols) {
      Context::set_why(str_cat("sparse linear on vulkan: column ", cc, " of nonzero ", e, " is outside [0, ", a.cols, ")"));
      return Status::InvalidArgument;
    }
    col[static_cast<size_t>(e)] = static_cast<int32_t>(cc);
  }
  try {
    s.row_ptr = upload(row_ptr, DType::Int32);
    s.col = upload(col, DType::Int32);
    if (s.int8) {
      std::vector<uint32_t> words(static_cast<size_t>(std::max<int64_t>((s.nnz + 3) / 4, 1)), 0u);
      for (int64_t e = 0; e < s.nnz; ++e)
        words[static_cast<size_t>(e / 4)] |= static_cast<uint32_t>(static_cast<uint8_t>(a.qvalues[e])) << (8 * (e % 4));
      s.values = upload(words, DType::Int32);
      s.row_scale = upload(std::vector<float>(a.row_scale, a.row_scale + a.rows), DType::Float32);
    } else {
      std::vector<float> values(col.size(), 0.0f);
      std::copy(a.values, a.values + s.nnz, values.begin());
      s.values = upload(values, DType::Float32);
    }
  } catch (const Error& e) {
    Context::set_why(str_cat("sparse linear on vulkan: ", e.what()));
    return e.status();
  }
  return s;
}

Tensor sparse_linear(const Tensor& x, const VkSparseLinear& w, const Tensor& bias, const Activation& act) {
  const Rows r = as_rows(x, w.cols, w.rows, "sparse linear");
  Tensor b;
  if (bias.defined()) {
    EMBER_CHECK(bias.dtype() == DType::Float32 && bias.dim() == 1 && bias.size(0) == w.rows, Status::ShapeMismatch,
                "sparse linear: expected a float32 bias [", w.rows, "]");
    b = bias.device().type() == DeviceType::Vulkan ? bias : bias.to(kDevice);
  }
  Tensor y = empty(r.out_shape, TensorOptions(DType::Float32).device(kDevice));
  if (r.m == 0) return y;
  constexpr int64_t kRowsPerGroup = 4;
  const ActPush a = act_push(act);
  for (int64_t row0 = 0; row0 < r.m; row0 += kMaxGroups * kRowsPerGroup) {
    for (int64_t col0 = 0; col0 < w.rows; col0 += kMaxGroups) {
      Dispatch d(shaders::spmm);
      SpmmPush p{};
      p.x_first = d.bind(r.view);
      p.row_ptr_first = d.bind(w.row_ptr.kernel_view());
      p.col_first = d.bind(w.col.kernel_view());
      p.val_first = d.bind(w.values.kernel_view());
      p.row_scale_first = d.bind_or(w.int8 ? w.row_scale.kernel_view() : TensorView{}, w.row_ptr.kernel_view());
      p.bias_first = d.bind_or(b.defined() ? b.kernel_view() : TensorView{}, w.row_ptr.kernel_view());
      p.y_first = d.bind(y.kernel_view());
      p.m = u32(r.m);
      p.n = u32(w.rows);
      p.row0 = u32(row0);
      p.col0 = u32(col0);
      p.x_row_stride = u32(r.view.strides[0]);
      p.x_col_stride = u32(r.view.strides[1]);
      p.int8 = w.int8 ? 1u : 0u;
      p.has_bias = b.defined() ? 1u : 0u;
      p.act = a.kind;
      p.act_lo = a.lo;
      p.act_hi = a.hi;
      const int64_t rows = std::min(r.m - row0, kMaxGroups * kRowsPerGroup);
      const int64_t cols = std::min(w.rows - col0, kMaxGroups);
      check(d.run(p, u32(cols), groups(rows, kRowsPerGroup), 1, {64}), "sparse linear");
    }
  }
  return y;
}

}  // namespace ember::vk
