// The device-generic kernel suite, as ggml's tests/test-backend-ops.cpp: for
// every backend compiled in other than the reference, every KernelEntry of
// backend->kernels() and every dtype of its DTypeSet, run the entry's kernel on
// seeded random inputs and compare with the reference kernel (kernels/ref) on
// the same views. The cases come from one switch over OpKind (no default: a new
// op in ops.def without a case does not compile); a kernel entry whose op and
// dtype get no case, or whose every case is NotSupported, fails the suite.
//
// Built twice (tests/BUILD): //tests:kernel_suite_test checks the CPU backend's
// own kernels (kernels/cpu/kernels.inc); //tests:vulkan_kernel_suite_test
// (EMBER_KERNEL_SUITE_VULKAN) checks kernels/vulkan/kernels.inc on lavapipe with
// the validation layer on; //tests:cuda_kernel_suite_test (EMBER_KERNEL_SUITE_CUDA)
// checks kernels/cuda/kernels.inc (on the host emulation here, on the GPU in the
// --config=cuda build). The reference backward kernels are also checked
// against central finite differences of the reference forward kernels.
#pragma GCC diagnostic error "-Wswitch"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"
#include "tests/harness/testing.h"
#if EMBER_KERNEL_SUITE_VULKAN
#include "kernels/vulkan/context.h"
#endif

using namespace ember;

namespace {

// ---- the reference table ------------------------------------------------------

constexpr KernelEntry kRefKernels[] = {
#define RT_KERNEL(op, dtypes, fn) {OpKind::op, dtypes, &ref::fn, nullptr},
#define RT_KERNEL_WS(op, dtypes, fn, ws) {OpKind::op, dtypes, &ref::fn, &ref::ws},
#include "kernels/ref/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_WS
};

const KernelEntry* ref_kernel(OpKind op, DType dtype) {
  for (const KernelEntry& e : kRefKernels) {
    if (e.op == op && (e.dtypes & dtype_bit(dtype)) != 0) return &e;
  }
  return nullptr;
}

bool is_ref_fn(KernelFn fn) {
  for (const KernelEntry& e : kRefKernels) {
    if (e.fn == fn) return true;
  }
  return false;
}

constexpr DType kDTypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int8,
                             DType::UInt8,   DType::Int16,   DType::Int32,   DType::Int64,    DType::Bool,
                             DType::UInt16,  DType::UInt32,  DType::UInt64,
                             // storage-only (Copy only)
                             DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2, DType::Float8E5M2FNUZ,
                             DType::Float8E8M0FNU, DType::Float4E2M1FN, DType::Int4, DType::UInt4, DType::Int2,
                             DType::UInt2};

// ---- error bounds ---------------------------------------------------------------
// Integer and bool outputs are always exact. Floating outputs: per element
// |actual - expected| / (|expected| + 1) (relative, absolute near zero) must be
// within the bound of the case's family and the output's dtype; accumulating
// families scale it by sqrt(K), K the number of terms one output sums.

enum class Family {
  Exact,        // copy, fill, pad, embedding, max/min values, relu/abs/neg/clamp, select-like ops
  Elementwise,  // one rounding of an elementwise function (transcendentals, div, pow)
  Accumulate,   // reductions, softmax, norms, matmul, conv, average pooling: K terms
};

constexpr double kF64Elementwise = 1e-12;
constexpr double kF64Accumulate = 1e-12;
constexpr double kF32Elementwise = 1e-6;
constexpr double kF32Accumulate = 1e-5;
constexpr double kF16Elementwise = 1e-3;   // float16: one rounding is 2^-11 relative
constexpr double kF16Accumulate = 1e-3;
constexpr double kBF16Elementwise = 8e-3;  // bfloat16: one rounding is 2^-8 relative
constexpr double kBF16Accumulate = 8e-3;
// Gradient mode: reference backward vs central differences of the reference forward.
constexpr double kFiniteDifferenceEps = 1e-6;
constexpr double kFiniteDifferenceTol = 1e-6;

double bound_for(DType dtype, Family family, int64_t k) {
  if (family == Family::Exact || !is_floating(dtype)) return 0.0;
  const double scale = family == Family::Accumulate ? std::sqrt(static_cast<double>(std::max<int64_t>(k, 1))) : 1.0;
  switch (dtype) {
    case DType::Float64:
      return (family == Family::Accumulate ? kF64Accumulate : kF64Elementwise) * scale;
    case DType::Float16:
      return (family == Family::Accumulate ? kF16Accumulate : kF16Elementwise) * scale;
    case DType::BFloat16:
      return (family == Family::Accumulate ? kBF16Accumulate : kBF16Elementwise) * scale;
    default:
      return (family == Family::Accumulate ? kF32Accumulate : kF32Elementwise) * scale;
  }
}

// ---- operands and cases ---------------------------------------------------------

using ViewFn = std::function<Tensor(const Tensor&)>;

// One kernel argument: a contiguous CPU base holding the values and the view
// the kernel sees, applied to the base after it is on the device (so the
// non-contiguous or broadcast structure is the device tensor's own).
struct Operand {
  Tensor base;  // undefined: an absent optional input (data == nullptr)
  ViewFn view;  // null: the base itself
  std::string layout = "contiguous";
  Tensor apply(const Tensor& b) const { return view ? view(b) : b; }
  Shape shape() const { return base.defined() ? apply(base).sizes() : Shape{}; }
};

struct QuantWeight;

struct Case {
  std::string desc;
  std::vector<Operand> in;
  std::vector<Operand> out;  // bases hold the initial contents (a sentinel, or zeros)
  OpParams params = NoParams{};
  Family family = Family::Exact;
  int64_t k = 1;
  bool inplace = false;  // the output is input 0 itself (out is empty): in-place front-ends (add_, relu_)
  // Run-time ops (QLinear, QConv2d): the weight each backend prepares
  // (Backend::prepare_weight; the reference: ref::prepare_weight) and the
  // kernel reads through params.weight.
  std::shared_ptr<const QuantWeight> qweight;
  bool kinked = false;  // ties or NaNs where the forward is not differentiable: gradient mode skips it
};

struct QuantWeight {
  Tensor q;  // int8 [N, K] or [C_out, C_in, kh, kw]; SparseLinear: the COO values [nnz]
  std::vector<float> scales;
  std::vector<int64_t> zero_points;  // SparseLinear only
  bool per_channel = false, per_row = false;
  Tensor bias;  // float32 [N] or undefined (QLinear, QConv2d: packed in the weight)
  Conv2dParams conv;
  Tensor indices;  // SparseLinear: COO [2, nnz]
  int64_t rows = 0, cols = 0;
  WeightDesc desc() const {
    WeightDesc d;
    d.weight = q.kernel_view();
    d.scales = scales.empty() ? nullptr : scales.data();
    d.num_scales = scales.size();
    d.zero_points = zero_points.empty() ? nullptr : zero_points.data();
    d.num_zero_points = zero_points.size();
    if (indices.defined()) d.indices = indices.kernel_view();
    d.rows = rows;
    d.cols = cols;
    d.per_channel = per_channel;
    d.per_row_activations = per_row;
    if (bias.defined()) d.bias = bias.kernel_view();
    d.conv = conv;
    return d;
  }
};

// `params` with its prepared weight set to `w`.
OpParams with_weight(OpParams params, const PreparedWeight* w) {
  if (auto* p = std::get_if<QLinearParams>(&params)) p->weight = w;
  if (auto* p = std::get_if<QConv2dParams>(&params)) p->weight = w;
  return params;
}

// `c` computed in place on its first input.
Case in_place(Case c) {
  c.desc += " (in place)";
  c.out.clear();
  c.inplace = true;
  return c;
}

std::string shape_text(const Shape& s) { return shape_str(s); }

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

// The seeded source of every value (reseeded per (op, dtype): cases do not
// depend on which other ops ran).
std::mt19937_64 g_rng(0);

enum class Dom { Normal, Positive, NearOne, Quantized, Index, Unit, AboveOne };

Tensor from_doubles(const std::vector<double>& v, const Shape& shape, DType dtype) {
  return tensor<double>(v, shape, DType::Float64).to(dtype);
}

// Random values of `dtype`: floats by domain; integers small (and >= 0 for
// uint8); bools half true. Index: integers in [0, hi).
Tensor values(const Shape& shape, DType dtype, Dom dom = Dom::Normal, int64_t hi = 0) {
  const int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (double& x : v) {
    if (dom == Dom::Index) {
      x = static_cast<double>(std::uniform_int_distribution<int64_t>(0, hi - 1)(g_rng));
    } else if (dtype == DType::Bool) {
      x = unit(g_rng) < 0.5 ? 1.0 : 0.0;
    } else if (!is_floating(dtype)) {
      const bool unsigned_int = dtype == DType::UInt8 || dtype == DType::UInt16 || dtype == DType::UInt32 ||
                                dtype == DType::UInt64 || dtype == DType::UInt4 || dtype == DType::UInt2;
      const int64_t lo = unsigned_int ? 0 : -5, top = unsigned_int ? 10 : 5;
      x = static_cast<double>(std::uniform_int_distribution<int64_t>(lo, top)(g_rng));
    } else {
      switch (dom) {
        case Dom::Normal: x = normal(g_rng); break;
        case Dom::Positive: x = std::fabs(normal(g_rng)) * 2.0 + 0.05; break;
        case Dom::NearOne: x = 0.75 + 0.5 * unit(g_rng); break;
        case Dom::Quantized: x = std::round(normal(g_rng) * 2.0) / 2.0; break;  // repeats: ties, equal pairs
        case Dom::Unit: x = 1.9 * unit(g_rng) - 0.95; break;  // inside (-1, 1): asin, acos, atanh, log1p
        case Dom::AboveOne: x = 1.05 + std::fabs(normal(g_rng)) * 2.0; break;  // acosh
        case Dom::Index: break;
      }
    }
  }
  return from_doubles(v, shape, dtype);
}

Operand contig(Tensor t) { return Operand{std::move(t), nullptr, "contiguous"}; }

// A permuted view of logical shape `shape`: the base is stored in `perm` order.
Operand permuted(const Shape& shape, std::vector<int64_t> perm, DType dtype, Dom dom = Dom::Normal, int64_t hi = 0) {
  Shape base_shape(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) base_shape[i] = shape[static_cast<size_t>(perm[i])];
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  std::ostringstream name;
  name << "permuted(";
  for (size_t i = 0; i < perm.size(); ++i) name << (i ? "," : "") << perm[i];
  name << ")";
  return Operand{values(base_shape, dtype, dom, hi), [inv](const Tensor& b) { return b.permute(inv); }, name.str()};
}

// Last two dims swapped (a transposed matrix view).
Operand transposed(const Shape& shape, DType dtype, Dom dom = Dom::Normal, int64_t hi = 0) {
  std::vector<int64_t> perm(shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  Operand o = permuted(shape, perm, dtype, dom, hi);
  o.layout = "transposed";
  return o;
}

// Every other element of the last dim (a slice with step 2).
Operand stepped(const Shape& shape, DType dtype, Dom dom = Dom::Normal, int64_t hi = 0) {
  Shape base_shape = shape;
  base_shape.back() = 2 * shape.back() + 1;
  const int64_t n = shape.back();
  return Operand{values(base_shape, dtype, dom, hi),
                 [n](const Tensor& b) { return b.slice(-1, 1, 1 + 2 * n, 2); }, "stepped"};
}

// `base_shape` broadcast (stride 0) to `shape`.
Operand expanded(const Shape& base_shape, const Shape& shape, DType dtype, Dom dom = Dom::Normal) {
  Tensor b = values(base_shape, dtype, dom);
  const size_t extra = shape.size() - base_shape.size();
  Shape padded(extra, 1);
  padded.insert(padded.end(), base_shape.begin(), base_shape.end());
  return Operand{b, [padded, shape](const Tensor& t) { return t.reshape(padded).expand(shape); },
                 "broadcast" + shape_text(base_shape)};
}

Operand absent() { return Operand{Tensor(), nullptr, "absent"}; }

// Output operands: the base holds `init` (a sentinel that shows elements a
// kernel did not write, or zeros for the accumulating backward kernels).
constexpr double kSentinel = 99.0;

Operand out_contig(const Shape& shape, DType dtype, double init = kSentinel) {
  return Operand{full(shape, init, dtype), nullptr, "contiguous"};
}
Operand out_stepped(const Shape& shape, DType dtype, double init = kSentinel) {
  Shape base_shape = shape;
  base_shape.back() = 2 * shape.back() + 1;
  const int64_t n = shape.back();
  return Operand{full(base_shape, init, dtype), [n](const Tensor& b) { return b.slice(-1, 1, 1 + 2 * n, 2); },
                 "stepped"};
}

// An output stored in `perm` order (the layout a front-end's empty_like gives a
// permuted input).
Operand out_permuted(const Shape& shape, std::vector<int64_t> perm, DType dtype, double init = kSentinel) {
  Shape base_shape(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) base_shape[i] = shape[static_cast<size_t>(perm[i])];
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return Operand{full(base_shape, init, dtype), [inv](const Tensor& b) { return b.permute(inv); }, "permuted"};
}

Operand out_transposed(const Shape& shape, DType dtype, double init = kSentinel) {
  std::vector<int64_t> perm(shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return out_permuted(shape, perm, dtype, init);
}

// `t` with NaN at the given flat positions (floating dtypes; others unchanged).
Tensor with_nans(Tensor t, std::initializer_list<int64_t> at, double value = NAN) {
  if (!is_floating(t.dtype())) return t;
  for (int64_t i : at) t.flatten().narrow(0, i, 1).fill_(value);
  return t;
}

// ---- per-op case generators ------------------------------------------------------

bool is_float(DType t) { return is_floating(t); }
bool is_int(DType t) { return !is_floating(t) && t != DType::Bool; }

// The extreme values of an integer dtype and its neighbours (wrap-around).
std::vector<double> int_extremes(DType t) {
  switch (t) {
    case DType::Int8: return {-128, 127, -127, -1, 0, 1, 100, -100};
    case DType::UInt8: return {0, 255, 254, 1, 128, 127, 200, 3};
    case DType::Int16: return {-32768, 32767, -32767, -1, 0, 1, 300, -300};
    case DType::Int32: return {-2147483648.0, 2147483647.0, -2147483647.0, -1, 0, 1, 65536, -7};
    case DType::UInt16: return {0, 65535, 65534, 1, 32768, 32767, 300, 3};
    case DType::UInt32: return {0, 4294967295.0, 4294967294.0, 1, 2147483648.0, 2147483647.0, 65536, 7};
    case DType::UInt64: return {0, 18446744073709549568.0, 9223372036854775808.0, 1, 5000000000.0, 65536, 63, 7};
    default: return {-9.2233720368547758e18, 1099511627776.0, -1099511627776.0, -1, 0, 1, 5000000000.0, -7};
  }
}

// The extremes in order, or reversed (a second operand that pairs them differently).
Tensor extremes_tensor(DType t, bool reversed = false) {
  if (t == DType::Int64) {
    std::vector<int64_t> v = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                              -(int64_t{1} << 40), (int64_t{1} << 53) + 1, 5000000000LL, -1, 0, 1};
    if (reversed) std::reverse(v.begin(), v.end());
    return tensor<int64_t>(v, {8}, DType::Int64);
  }
  std::vector<double> v = int_extremes(t);
  if (reversed) std::reverse(v.begin(), v.end());
  return from_doubles(v, {8}, t);
}

const std::vector<double> kSpecials = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 30.0, -30.0, 100.0, -100.0, 1e-4, -1e-4, 0.5};

Tensor specials(DType t) {
  return from_doubles(kSpecials, {static_cast<int64_t>(kSpecials.size())}, t);
}

// Unary ops: one input, one output of the same dtype.
std::vector<Case> unary_cases(DType dt, Dom dom, Family family, const OpParams& params, const std::string& tag) {
  std::vector<Case> cs;
  auto add = [&](std::string d, Operand x) {
    const Shape s = x.shape();
    cs.push_back({tag + d, {std::move(x)}, {out_contig(s, dt)}, params, family, 1});
  };
  for (const Shape& s : std::vector<Shape>{{1}, {7}, {65}, {}, {3, 17}, {0, 3}}) add(shape_text(s), contig(values(s, dt, dom)));
  add("[17,7]", transposed({17, 7}, dt, dom));
  add("[3,7,17]", permuted({3, 7, 17}, {2, 0, 1}, dt, dom));
  add("[5,9]", stepped({5, 9}, dt, dom));
  {
    Operand x = contig(values({7, 9}, dt, dom));
    cs.push_back({tag + "[7,9] into a stepped output", {x}, {out_stepped({7, 9}, dt)}, params, family, 1});
  }
  if (is_float(dt)) add("special values", contig(specials(dt)));
  if (is_int(dt)) add("integer extremes", contig(extremes_tensor(dt)));
  cs.push_back(in_place({tag + "[4,6] stepped", {stepped({4, 6}, dt, dom)}, {}, params, family, 1}));
  cs.push_back(in_place({tag + "[6,4] transposed", {transposed({6, 4}, dt, dom)}, {}, params, family, 1}));
  return cs;
}

// An RT_UNARY_P op: its cases with params (a, b) and with (0.7, 0.3).
std::vector<Case> unary_p_cases(DType dt, double a, double b) {
  std::vector<Case> cs = unary_cases(dt, Dom::Normal, Family::Elementwise, UnaryParams{a, b}, "default ");
  for (Case& c : unary_cases(dt, Dom::Normal, Family::Elementwise, UnaryParams{0.7, 0.3}, "a 0.7 b 0.3 ")) {
    cs.push_back(std::move(c));
  }
  return cs;
}

// Binary ops: inputs broadcast to the output's shape (the front-ends expand).
std::vector<Case> binary_cases(OpKind op, DType dt, DType out_dt, Dom dom, Family family) {
  std::vector<Case> cs;
  auto add = [&](std::string d, Operand a, Operand b, Operand o) {
    cs.push_back({d, {std::move(a), std::move(b)}, {std::move(o)}, NoParams{}, family, 1});
  };
  for (const Shape& s : std::vector<Shape>{{1}, {7}, {257}, {}, {0, 4}}) {
    add(shape_text(s), contig(values(s, dt, dom)), contig(values(s, dt, dom)), out_contig(s, out_dt));
  }
  const Shape big = {4, 3, 5};
  add("[4,1,5] with [3,1] -> [4,3,5]", expanded({4, 1, 5}, big, dt, dom), expanded({3, 1}, big, dt, dom),
      out_contig(big, out_dt));
  add("[3,1] with [4,1,5] -> [4,3,5]", expanded({3, 1}, big, dt, dom), expanded({4, 1, 5}, big, dt, dom),
      out_contig(big, out_dt));
  add("transposed [9,13] with contiguous", transposed({9, 13}, dt, dom), contig(values({9, 13}, dt, dom)),
      out_contig({9, 13}, out_dt));
  add("0-dim broadcast over [9,13]", expanded({}, {9, 13}, dt, dom), contig(values({9, 13}, dt, dom)),
      out_contig({9, 13}, out_dt));
  add("permuted [3,7,17] with stepped, into a stepped output", permuted({3, 7, 17}, {1, 2, 0}, dt, dom),
      stepped({3, 7, 17}, dt, dom), out_stepped({3, 7, 17}, out_dt));
  if (is_float(dt)) {
    // Every pair of special values.
    const int64_t n = static_cast<int64_t>(kSpecials.size());
    std::vector<double> a, b;
    for (double x : kSpecials) {
      for (double y : kSpecials) {
        a.push_back(x);
        b.push_back(y);
      }
    }
    add("special value pairs", contig(from_doubles(a, {n * n}, dt)), contig(from_doubles(b, {n * n}, dt)),
        out_contig({n * n}, out_dt));
  }
  if (is_int(dt) && op != OpKind::Pow) {
    add("integer extremes (wrap-around)", contig(extremes_tensor(dt)), contig(extremes_tensor(dt, true)),
        out_contig({8}, out_dt));
    add("integer extremes with themselves", contig(extremes_tensor(dt)), contig(extremes_tensor(dt)),
        out_contig({8}, out_dt));
  }
  if (out_dt == dt) {  // in place (add_, mul_, ...): the output is the first input
    cs.push_back(in_place({"[4,3] stepped, broadcast [3]", {stepped({4, 3}, dt, dom), expanded({3}, {4, 3}, dt, dom)},
                           {}, NoParams{}, family, 1}));
    cs.push_back(in_place({"[6,4] transposed, broadcast [4]", {transposed({6, 4}, dt, dom), expanded({4}, {6, 4}, dt, dom)},
                           {}, NoParams{}, family, 1}));
  }
  if (op == OpKind::Add && dt == DType::Int32) {
    // Beyond one row of workgroups (a 2-D dispatch grid on Vulkan).
    const int64_t n = int64_t{65535} * 256 + 300;
    add("[16777260]: a 2-D grid", contig(arange(n, DType::Int32)), expanded({1}, {n}, dt, dom),
        out_contig({n}, out_dt));
  }
  return cs;
}


std::vector<Case> pow_cases(DType dt) {
  if (is_float(dt)) {
    std::vector<Case> cs;
    auto add = [&](std::string d, Operand a, Operand b) {
      const Shape s = a.shape();
      cs.push_back({d, {std::move(a), std::move(b)}, {out_contig(s, dt)}, NoParams{}, Family::Elementwise, 1});
    };
    for (const Shape& s : std::vector<Shape>{{1}, {7}, {257}, {}, {0, 4}}) {
      add(shape_text(s), contig(values(s, dt, Dom::Positive)), contig(values(s, dt, Dom::Normal)));
    }
    add("transposed base, broadcast exponent", transposed({9, 13}, dt, Dom::Positive), expanded({13}, {9, 13}, dt));
    add("integral exponents of negative bases", contig(values({5, 7}, dt, Dom::Quantized)),
        contig(from_doubles(std::vector<double>(35, 3.0), {5, 7}, dt)));
    // Special bases and exponents (IEEE pow's special cases).
    add("special values",
        contig(from_doubles({2, -2, -2, -2, 0, 0, -0.0, 1, NAN, 0.5, -1, 3, INFINITY, -INFINITY, -INFINITY, 1.7}, {16}, dt)),
        contig(from_doubles({10, 3, 2, 0.5, 2, -1, -3, NAN, 0, INFINITY, -INFINITY, -2.5, -1, 3, 2, 4.3}, {16}, dt)));
    return cs;
  }
  // Integers (and bool): small powers, powers that wrap, negative exponents.
  std::vector<Case> cs = binary_cases(OpKind::Pow, dt, dt, Dom::Normal, Family::Exact);
  for (Case& c : cs) {  // exponents >= 0 with small bases: stay defined
    if (c.in[1].base.defined() && dt != DType::Bool) c.in[1].base = c.in[1].base.abs();
  }
  const Tensor b = from_doubles({3, -3, 2, 7, -1, -1, 1, 0, 5, 2, 0, -2}, {12}, DType::Int32).to(dt);
  const Tensor e = from_doubles({4, 3, 30, 25, -3, -4, -7, 0, -1, 41, 3, 63}, {12}, DType::Int32).to(dt);
  cs.push_back({"wrapping and negative exponents", {contig(b), contig(e)}, {out_contig({12}, dt)}, NoParams{},
                Family::Exact, 1});
  return cs;
}

std::vector<Case> where_cases(DType dt) {
  std::vector<Case> cs;
  auto add = [&](std::string d, Operand a, Operand b, Operand c) {
    const Shape s = a.shape();
    cs.push_back({d, {std::move(a), std::move(b), std::move(c)}, {out_contig(s, dt)}, NoParams{}, Family::Exact, 1});
  };
  for (const Shape& s : std::vector<Shape>{{1}, {7}, {257}, {}, {0, 4}}) {
    add(shape_text(s), contig(values(s, dt)), contig(values(s, dt)), contig(values(s, DType::Bool)));
  }
  const Shape s = {4, 5};
  add("a [1,5], b [4,5], cond [4,1]", expanded({1, 5}, s, dt), contig(values(s, dt)), expanded({4, 1}, s, DType::Bool));
  add("transposed a and cond, contiguous b", transposed({9, 13}, dt), contig(values({9, 13}, dt)),
      transposed({9, 13}, DType::Bool));
  add("0-dim a and b, stepped cond", expanded({}, {5, 7}, dt), expanded({}, {5, 7}, dt), stepped({5, 7}, DType::Bool));
  return cs;
}

// Reductions: the output keeps the reduced dims with size 1.
Shape reduced_shape(const Shape& s, uint32_t dims) {
  Shape o = s;
  for (size_t d = 0; d < s.size(); ++d) {
    if ((dims >> d) & 1u) o[d] = 1;
  }
  return o;
}

int64_t reduced_count(const Shape& s, uint32_t dims) {
  int64_t k = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if ((dims >> d) & 1u) k *= s[d];
  }
  return k;
}

// n_out: 1 (a reduction, or argmax/argmin: int64), 2 (max/min: values, int64 indices).
std::vector<Case> reduce_cases(OpKind op, DType dt) {
  const bool extreme = op == OpKind::Max || op == OpKind::Min;
  const bool arg = op == OpKind::ArgMax || op == OpKind::ArgMin;
  const Dom dom = op == OpKind::Prod ? Dom::NearOne : Dom::Normal;
  const Family family = (extreme || arg) ? Family::Exact : Family::Accumulate;
  auto rp = [](uint32_t dims, int64_t correction = 1, double p = 2.0, bool keepdim = true) {
    ReduceParams r;
    r.dims = dims;
    r.correction = correction;
    r.p = p;
    r.keepdim = keepdim;
    return r;
  };
  std::vector<Case> cs;
  auto add = [&](std::string d, Operand x, ReduceParams r) {
    const Shape s = x.shape();
    const Shape o = reduced_shape(s, r.dims);
    std::vector<Operand> outs;
    if (extreme) {
      outs = {out_contig(o, dt), out_contig(o, DType::Int64)};
    } else if (arg) {
      outs = {out_contig(o, DType::Int64)};
    } else {
      outs = {out_contig(o, dt)};
    }
    std::ostringstream name;
    name << d << " dims=0x" << std::hex << r.dims << std::dec;
    if (op == OpKind::Var) name << " correction=" << r.correction;
    if (op == OpKind::Norm) name << " p=" << r.p;
    if (!r.keepdim) name << " keepdim=false";
    cs.push_back({name.str(), {std::move(x)}, std::move(outs), r, family, reduced_count(s, r.dims)});
  };
  add("[1]", contig(values({1}, dt, dom)), rp(1));
  add("[]", contig(values({}, dt, dom)), rp(0));
  add("[65]", contig(values({65}, dt, dom)), rp(1));
  for (uint32_t dims : {1u, 2u, 3u}) add("[7,17]", contig(values({7, 17}, dt, dom)), rp(dims));
  add("[7,17]", contig(values({7, 17}, dt, dom)), rp(2, 1, 2.0, false));
  for (uint32_t dims : {4u, 5u, 2u, 7u}) add("[3,5,65]", contig(values({3, 5, 65}, dt, dom)), rp(dims));
  add("transposed [17,7]", transposed({17, 7}, dt, dom), rp(2));
  add("transposed [17,7]", transposed({17, 7}, dt, dom), rp(1));
  add("permuted [3,5,7]", permuted({3, 5, 7}, {2, 0, 1}, dt, dom), rp(5));
  add("stepped [5,9]", stepped({5, 9}, dt, dom), rp(2));
  add("broadcast [1,9] -> [5,9]", expanded({1, 9}, {5, 9}, dt, dom), rp(1));
  add("[0,5]: empty, kept dims", contig(values({0, 5}, dt, dom)), rp(2));
  if (!extreme && !arg) add("[0,5]: nothing reduced", contig(values({0, 5}, dt, dom)), rp(1));
  if (op == OpKind::Var) {
    for (int64_t c : {0, 2}) add("[7,17]", contig(values({7, 17}, dt, dom)), rp(2, c));
    add("[1,5]: N - correction = 0", contig(values({1, 5}, dt, dom)), rp(1, 1));
  }
  if (op == OpKind::Norm) {
    for (double p : std::vector<double>{1.0, 3.0, 0.5, INFINITY, -INFINITY, 0.0}) add("[7,17]", contig(values({7, 17}, dt, dom)), rp(2, 1, p));
  }
  if (is_float(dt)) add("special values", contig(specials(dt).reshape({2, 6})), rp(2));
  // Long rows, more rows than one grid dimension, column reductions (kept dims contiguous).
  add("[100003]", contig(values({100003}, dt, dom)), rp(1));
  add("[70001,3]", contig(values({70001, 3}, dt, dom)), rp(2));
  add("[70001,3]", contig(values({70001, 3}, dt, dom)), rp(1));
  add("[300,257]", contig(values({300, 257}, dt, dom)), rp(1));
  add("[3,40,300]", contig(values({3, 40, 300}, dt, dom)), rp(3));
  add("[2,1000]", contig(values({2, 1000}, dt, dom)), rp(1));
  add("[4,1,33]", contig(values({4, 1, 33}, dt, dom)), rp(5));
  // NaNs (max/min: the first NaN wins), and an inf.
  for (uint32_t dims : {1u, 2u, 3u}) {
    add("[4,300] with NaNs at (1,250), (1,260), (2,7), inf at (3,0)",
        contig(with_nans(with_nans(values({4, 300}, dt, dom), {550, 560, 607}), {900}, INFINITY)), rp(dims));
  }
  // Eight dims in reverse memory order: nothing merges (5 reduced dims: beyond some
  // backends' addressing; 4 kept and 4 reduced).
  add("[2]*8 reversed", permuted({2, 2, 2, 2, 2, 2, 2, 2}, {7, 6, 5, 4, 3, 2, 1, 0}, dt, dom), rp(0x1f));
  add("[2]*8 reversed", permuted({2, 2, 2, 2, 2, 2, 2, 2}, {7, 6, 5, 4, 3, 2, 1, 0}, dt, dom), rp(0x55));
  if (op == OpKind::Var) add("[2]: correction 3 (inf)", contig(values({2}, dt, dom)), rp(1, 3));
  if (op == OpKind::Norm) {
    Tensor z = values({5, 37}, dt, dom);
    if (is_float(dt)) z.select(0, 2).fill_(0.0);
    for (double p : std::vector<double>{2.0, 1.0, 0.0, 3.0, 0.5, INFINITY, -INFINITY, -1.0, -2.5}) {
      add("[5,37] with a zero row", contig(z.clone()), rp(2, 1, p));
    }
  }
  if (extreme || arg) {
    add("ties: the first index", contig(values({5, 33}, dt, Dom::Quantized)), rp(2));
  }
  return cs;
}

std::vector<Case> matmul_cases(DType dt) {
  std::vector<Case> cs;
  const Family f = is_float(dt) ? Family::Accumulate : Family::Exact;
  auto add = [&](std::string d, Operand a, Operand b) {
    const Shape sa = a.shape(), sb = b.shape();
    const Shape so = {sa[0], sa[1], sb[2]};
    cs.push_back({d, {std::move(a), std::move(b)}, {out_contig(so, dt)}, NoParams{}, f, sa[2]});
  };
  const int64_t sizes[] = {1, 3, 17, 64, 65};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        std::ostringstream d;
        d << "M=" << m << " N=" << n << " K=" << k;
        add(d.str(), contig(values({1, m, k}, dt)), contig(values({1, k, n}, dt)));
      }
    }
  }
  add("batched [3,17,65] x [3,65,17]", contig(values({3, 17, 65}, dt)), contig(values({3, 65, 17}, dt)));
  add("batched, transposed a and b", transposed({3, 17, 33}, dt), transposed({3, 33, 9}, dt));
  add("batched, broadcast b (batch stride 0)", contig(values({4, 7, 17}, dt)), expanded({1, 17, 9}, {4, 17, 9}, dt));
  add("stepped a", stepped({2, 9, 17}, dt), contig(values({2, 17, 5}, dt)));
  add("permuted a [5,3,7] from [3,7,5]", permuted({2, 3, 7}, {2, 0, 1}, dt), contig(values({2, 7, 4}, dt)));
  add("K=0: zeros", contig(values({1, 3, 0}, dt)), contig(values({1, 0, 4}, dt)));
  add("M=0", contig(values({2, 0, 5}, dt)), contig(values({2, 5, 3}, dt)));
  add("B=0", contig(values({0, 3, 5}, dt)), contig(values({0, 5, 3}, dt)));
  return cs;
}

std::vector<Case> softmax_cases(DType dt) {
  std::vector<Case> cs;
  auto add = [&](std::string d, Operand x, int dim) {
    const Shape s = x.shape();
    const int64_t k = s.empty() ? 1 : s[static_cast<size_t>(dim < 0 ? dim + static_cast<int>(s.size()) : dim)];
    SoftmaxParams p;
    p.dim = dim;
    cs.push_back({d + " dim=" + std::to_string(dim), {std::move(x)}, {out_contig(s, dt)}, p, Family::Accumulate, k});
  };
  add("[1]", contig(values({1}, dt)), 0);
  add("[]", contig(values({}, dt)), 0);
  add("[]", contig(values({}, dt)), -1);
  add("[65]", contig(values({65}, dt)), 0);
  for (int dim : {0, 1}) add("[7,17]", contig(values({7, 17}, dt)), dim);
  for (int dim : {0, 1, 2}) add("[3,5,65]", contig(values({3, 5, 65}, dt)), dim);
  add("transposed [17,7]", transposed({17, 7}, dt), 1);
  add("transposed [17,7]", transposed({17, 7}, dt), 0);
  add("permuted [3,5,7]", permuted({3, 5, 7}, {2, 0, 1}, dt), 2);
  add("stepped [5,9]", stepped({5, 9}, dt), 1);
  add("[0,5]", contig(values({0, 5}, dt)), 1);
  add("[5,0]", contig(values({5, 0}, dt)), 1);
  for (int dim : {0, 1, 2}) add("[2,1,300]", contig(values({2, 1, 300}, dt)), dim);
  for (int dim : {0, 1, 2, 3}) add("[2,3,4,5]", contig(values({2, 3, 4, 5}, dt)), dim);
  add("[3,5000] (long rows)", contig(values({3, 5000}, dt)), 1);
  add("[70001,2] (many rows)", contig(values({70001, 2}, dt)), 1);
  for (int dim : {0, 1}) {
    add("[2,5,16,17] with a NaN", contig(with_nans(values({2, 5, 16, 17}, dt), {16 * 17 * 7 + 3})), dim);
    add("[40,300] with a NaN", contig(with_nans(values({40, 300}, dt), {302})), dim);
  }
  // A transposed input into a transposed output (the layout empty_like keeps).
  for (int dim : {0, 1}) {
    Operand x = transposed({9, 6}, dt);
    cs.push_back({"transposed [9,6] into a transposed output dim=" + std::to_string(dim), {std::move(x)},
                  {out_transposed({9, 6}, dt)}, [dim] { SoftmaxParams p; p.dim = dim; return p; }(), Family::Accumulate, 9});
  }
  if (is_float(dt)) {
    add("-inf, inf and NaN rows", contig(from_doubles({-INFINITY, 1, 2, -INFINITY, -INFINITY, -INFINITY, 1, INFINITY,
                                                       3, NAN, 0, 1, 50, -50, 60, 0},
                                                      {4, 4}, dt)),
        1);
  }
  return cs;
}

// ScaledDotProductAttention: q [*, L, E], k [*, S, E], v [*, S, Ev], mask
// [*, L, S] (or absent), the leading dims equal (the front-end expands them).
std::vector<Case> attention_cases(DType dt) {
  std::vector<Case> cs;
  auto add = [&](std::string d, Operand q, Operand k, Operand v, Operand m, double scale = 0.35) {
    Shape o = q.shape();
    o.back() = v.shape().back();
    AttentionParams p;
    p.scale = scale;
    const int64_t terms = std::max(q.shape().back(), k.shape()[k.shape().size() - 2]);
    cs.push_back({std::move(d), {std::move(q), std::move(k), std::move(v), std::move(m)}, {out_contig(o, dt)}, p,
                  Family::Accumulate, terms});
  };
  add("[2,3,5,8] x [2,3,7,8] x [2,3,7,6]", contig(values({2, 3, 5, 8}, dt)), contig(values({2, 3, 7, 8}, dt)),
      contig(values({2, 3, 7, 6}, dt)), absent(), 1.0);
  add("a mask [2,1,1,7] broadcast", contig(values({2, 3, 5, 8}, dt)), contig(values({2, 3, 7, 8}, dt)),
      contig(values({2, 3, 7, 6}, dt)), expanded({2, 1, 1, 7}, {2, 3, 5, 7}, dt));
  add("a mask [2,1,1,7] at scale 1: the GEMM's column bias", contig(values({2, 3, 5, 8}, dt)),
      contig(values({2, 3, 7, 8}, dt)), contig(values({2, 3, 7, 6}, dt)), expanded({2, 1, 1, 7}, {2, 3, 5, 7}, dt), 1.0);
  add("heads permuted from [B, L, H, E], k transposed, a full mask", permuted({2, 3, 5, 8}, {0, 2, 1, 3}, dt),
      transposed({2, 3, 7, 8}, dt), permuted({2, 3, 7, 6}, {0, 2, 1, 3}, dt), contig(values({2, 3, 5, 7}, dt)));
  add("k broadcast over the batch (stride 0), v stepped", contig(values({2, 3, 5, 8}, dt)),
      expanded({1, 3, 7, 8}, {2, 3, 7, 8}, dt), stepped({2, 3, 7, 6}, dt), absent());
  add("600 keys: blocks of query rows", contig(values({1, 2, 70, 16}, dt)), contig(values({1, 2, 600, 16}, dt)),
      contig(values({1, 2, 600, 16}, dt)), expanded({70, 600}, {1, 2, 70, 600}, dt), 0.25);
  add("rank 2, one query", contig(values({1, 32}, dt)), contig(values({50, 32}, dt)), contig(values({50, 8}, dt)),
      absent());
  add("no keys (S = 0): zeros", contig(values({2, 5, 8}, dt)), contig(values({2, 0, 8}, dt)),
      contig(values({2, 0, 4}, dt)), absent());
  add("no queries (L = 0)", contig(values({2, 0, 8}, dt)), contig(values({2, 7, 8}, dt)),
      contig(values({2, 7, 4}, dt)), absent());
  if (is_float(dt)) {
    // The second row fully masked: NaN, as torch's softmax of -inf scores.
    add("a row of -inf scores", contig(values({1, 3, 4}, dt)), contig(values({1, 4, 4}, dt)),
        contig(values({1, 4, 5}, dt)),
        contig(from_doubles({0, 0, -INFINITY, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 1, 2, 3, 4}, {1, 3, 4}, dt)));
  }
  return cs;
}

std::vector<Case> layer_norm_cases(DType dt) {
  std::vector<Case> cs;
  auto add = [&](std::string d, Operand x, int nr, bool weight, bool bias, double eps = 1e-5) {
    const Shape s = x.shape();
    const Shape ns(s.end() - nr, s.end());
    NormParams p;
    p.eps = eps;
    p.normalized_rank = nr;
    std::ostringstream name;
    name << d << " normalized_rank=" << nr << (weight ? " weight" : "") << (bias ? " bias" : "") << " eps=" << eps;
    cs.push_back({name.str(),
                  {std::move(x), weight ? contig(values(ns, dt)) : absent(), bias ? contig(values(ns, dt)) : absent()},
                  {out_contig(s, dt)},
                  p,
                  Family::Accumulate,
                  numel_of(ns)});
  };
  for (bool w : {false, true}) {
    for (bool b : {false, true}) add("[7,17]", contig(values({7, 17}, dt)), 1, w, b);
  }
  add("[1]", contig(values({1}, dt)), 1, true, true);
  add("[3,5,65]", contig(values({3, 5, 65}, dt)), 2, true, true);
  add("[3,5,65]", contig(values({3, 5, 65}, dt)), 3, false, true);
  add("[2,3,64]", contig(values({2, 3, 64}, dt)), 1, true, false, 1e-3);
  add("transposed [17,7]", transposed({17, 7}, dt), 1, true, true);
  add("stepped [5,9]", stepped({5, 9}, dt), 1, true, true);
  add("[0,5]", contig(values({0, 5}, dt)), 1, true, true);
  for (int nr : {1, 2}) {
    for (bool w : {false, true}) {
      add("[4,1000]", contig(values({4, 1000}, dt)), nr, w, !w);
      add("[70001,3]", contig(values({70001, 3}, dt)), nr, w, w, 1e-2);
    }
  }
  add("[1,257]", contig(values({1, 257}, dt)), 1, true, true);
  add("transposed [40,20] (rows contiguous)", transposed({40, 20}, dt), 1, true, true);
  {
    Operand x = transposed({8, 5}, dt);
    NormParams p;
    cs.push_back({"transposed [8,5] into a transposed output", {std::move(x), contig(values({5}, dt)), absent()},
                  {out_transposed({8, 5}, dt)}, p, Family::Accumulate, 5});
  }
  add("constant rows (variance 0)", contig(from_doubles(std::vector<double>(24, 1.5), {3, 8}, dt)), 1, true, true);
  return cs;
}

// AddLayerNorm (a run-time op): layer_norm(a + b), a and b of one shape.
std::vector<Case> add_layer_norm_cases(DType dt) {
  std::vector<Case> cs;
  if (dt != DType::Float32) return cs;
  auto add = [&](std::string d, Operand a, Operand b, int nr, bool weight, bool bias) {
    const Shape s = a.shape();
    const Shape ns(s.end() - nr, s.end());
    NormParams p;
    p.normalized_rank = nr;
    std::ostringstream name;
    name << d << " normalized_rank=" << nr << (weight ? " weight" : "") << (bias ? " bias" : "");
    cs.push_back({name.str(),
                  {std::move(a), std::move(b), weight ? contig(values(ns, dt)) : absent(),
                   bias ? contig(values(ns, dt)) : absent()},
                  {out_contig(s, dt)}, p, Family::Accumulate, numel_of(ns) + 1});
  };
  add("[8,384]", contig(values({8, 384}, dt)), contig(values({8, 384}, dt)), 1, true, true);
  add("[2,3,65]", contig(values({2, 3, 65}, dt)), contig(values({2, 3, 65}, dt)), 2, false, true);
  add("[7,17]", contig(values({7, 17}, dt)), contig(values({7, 17}, dt)), 1, true, false);
  add("[70001,3]", contig(values({70001, 3}, dt)), contig(values({70001, 3}, dt)), 1, false, false);
  add("transposed [17,7]", transposed({17, 7}, dt), contig(values({17, 7}, dt)), 1, true, true);
  add("stepped [5,9]", contig(values({5, 9}, dt)), stepped({5, 9}, dt), 1, true, true);
  add("[0,5]", contig(values({0, 5}, dt)), contig(values({0, 5}, dt)), 1, true, true);
  return cs;
}

std::vector<Case> batch_norm_cases(DType dt) {
  std::vector<Case> cs;
  const bool half = dt == DType::Float16 || dt == DType::BFloat16;
  auto add = [&](std::string d, Operand x, bool weight, bool bias, DType pt) {
    const Shape s = x.shape();
    const Shape c = {s[1]};
    NormParams p;
    p.eps = 1e-5;
    std::ostringstream name;
    name << d << (weight ? " weight" : "") << (bias ? " bias" : "") << " statistics " << dtype_name(pt);
    cs.push_back({name.str(),
                  {std::move(x), contig(values(c, pt)), contig(values(c, pt, Dom::Positive)),
                   weight ? contig(values(c, pt)) : absent(), bias ? contig(values(c, pt)) : absent()},
                  {out_contig(s, dt)},
                  p,
                  Family::Accumulate,
                  4});
  };
  std::vector<DType> pts = {dt};
  if (half) pts.push_back(DType::Float32);
  for (DType pt : pts) {
    for (bool w : {false, true}) {
      for (bool b : {false, true}) add("[2,3,7,9]", contig(values({2, 3, 7, 9}, dt)), w, b, pt);
    }
    add("[5,17]", contig(values({5, 17}, dt)), true, true, pt);
    add("[2,3,65]", contig(values({2, 3, 65}, dt)), true, true, pt);
    add("channels_last [2,5,7,9]", permuted({2, 5, 7, 9}, {0, 2, 3, 1}, dt), true, true, pt);
    add("stepped [2,3,5,9]", stepped({2, 3, 5, 9}, dt), true, true, pt);
    add("[0,3,4,4]", contig(values({0, 3, 4, 4}, dt)), true, true, pt);
    add("[4,3]", contig(values({4, 3}, dt)), true, false, pt);
    add("[1,2,3,2,3]", contig(values({1, 2, 3, 2, 3}, dt)), false, true, pt);
    add("[3,1,257]", contig(values({3, 1, 257}, dt)), true, true, pt);
    NormParams p;
    p.eps = 1e-3;
    cs.push_back({"channels_last [2,3,4,5] into a channels_last output, eps 1e-3",
                  {permuted({2, 3, 4, 5}, {0, 2, 3, 1}, dt), contig(values({3}, pt)), contig(values({3}, pt, Dom::Positive)),
                   contig(values({3}, pt)), contig(values({3}, pt))},
                  {out_permuted({2, 3, 4, 5}, {0, 2, 3, 1}, dt)}, p, Family::Accumulate, 4});
  }
  return cs;
}

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

std::vector<Case> conv2d_cases(DType dt) {
  std::vector<Case> cs;
  const Family f = is_float(dt) ? Family::Accumulate : Family::Exact;
  // x [N, C, H, W] (layout: 0 contiguous, 1 channels_last, 2 stepped), weight [Cout, C/g, kh, kw].
  auto add = [&](std::string d, const Shape& xs, int64_t cout, int64_t kh, int64_t kw, int64_t stride, int64_t pad,
                 int64_t dil, int64_t groups, bool bias, int layout = 0, bool weight_transposed = false) {
    Conv2dParams p;
    p.stride[0] = p.stride[1] = stride;
    p.padding[0] = p.padding[1] = pad;
    p.dilation[0] = p.dilation[1] = dil;
    p.groups = groups;
    Operand x = layout == 1 ? permuted(xs, {0, 2, 3, 1}, dt) : layout == 2 ? stepped(xs, dt) : contig(values(xs, dt));
    const Shape ws = {cout, xs[1] / groups, kh, kw};
    Operand w = weight_transposed ? transposed(ws, dt) : contig(values(ws, dt));
    const Shape os = {xs[0], cout, conv_out(xs[2], kh, stride, pad, dil), conv_out(xs[3], kw, stride, pad, dil)};
    std::ostringstream name;
    name << d << " x" << shape_text(xs) << " w" << shape_text(ws) << " stride=" << stride << " padding=" << pad
         << " dilation=" << dil << " groups=" << groups << (bias ? " bias" : "") << " x " << x.layout
         << (weight_transposed ? " weight transposed" : "");
    cs.push_back({name.str(), {std::move(x), std::move(w), bias ? contig(values({cout}, dt)) : absent()},
                  {out_contig(os, dt)}, p, f, ws[1] * kh * kw});
  };
  add("1x1", {2, 8, 7, 9}, 17, 1, 1, 1, 0, 1, 1, true);
  add("1x1 channels_last", {2, 8, 7, 9}, 5, 1, 1, 1, 0, 1, 1, false, 1);
  add("1x1 groups 2", {2, 6, 5, 3}, 4, 1, 1, 1, 0, 1, 2, true);
  add("1x1 groups 2 channels_last", {2, 6, 5, 3}, 4, 1, 1, 1, 0, 1, 2, true, 1);
  add("3x3", {1, 3, 7, 9}, 5, 3, 3, 1, 1, 1, 1, true);
  add("3x3 no bias", {2, 3, 7, 9}, 4, 3, 3, 1, 0, 1, 1, false);
  add("3x3 stride 2", {2, 3, 9, 7}, 6, 3, 3, 2, 1, 1, 1, true);
  // Output rows of 38 and 35: im2col's vector stride-2 copy (16 at a time) and its tail.
  add("3x3 stride 2, wide rows", {1, 3, 5, 75}, 6, 3, 3, 2, 1, 1, 1, true);
  add("7x7 stride 2 padding 3, wide rows", {1, 2, 8, 70}, 5, 7, 7, 2, 3, 1, 1, false);
  add("3x3 dilation 2", {1, 4, 9, 9}, 3, 3, 3, 1, 2, 2, 1, true);
  add("groups 2", {2, 6, 7, 7}, 4, 3, 3, 1, 1, 1, 2, true);
  add("depthwise", {2, 8, 7, 9}, 8, 3, 3, 1, 1, 1, 8, true);
  add("depthwise stride 2", {1, 5, 9, 9}, 5, 3, 3, 2, 1, 1, 5, false);
  add("depthwise multiplier 2", {1, 4, 7, 7}, 8, 3, 3, 1, 1, 1, 4, true);
  add("gemm path (Cout/groups >= 16)", {2, 8, 9, 9}, 32, 3, 3, 1, 1, 1, 1, true);
  add("gemm path, groups 2", {1, 8, 7, 7}, 34, 3, 3, 2, 1, 1, 2, true);
  add("5x3 kernel, stride 1", {1, 3, 17, 5}, 3, 5, 3, 1, 2, 1, 1, true);
  add("3x3 channels_last", {2, 4, 7, 9}, 17, 3, 3, 1, 1, 1, 1, true, 1);
  add("3x3 stepped input", {1, 3, 7, 9}, 5, 3, 3, 1, 1, 1, 1, true, 2);
  add("3x3 non-contiguous weight", {1, 3, 7, 9}, 5, 3, 3, 1, 1, 1, 1, true, 0, true);
  add("empty batch", {0, 3, 7, 9}, 5, 3, 3, 1, 1, 1, 1, true);
  add("1x1 on 1x1", {1, 65, 1, 1}, 3, 1, 1, 1, 0, 1, 1, true);
  return cs;
}

// Symmetric int8 weights in [-127, 127] with positive scales.
std::shared_ptr<QuantWeight> quant_weight(const Shape& ws, bool per_channel, bool bias, bool per_row = false) {
  auto w = std::make_shared<QuantWeight>();
  std::vector<double> q(static_cast<size_t>(numel_of(ws)));
  for (double& v : q) v = static_cast<double>(std::uniform_int_distribution<int>(-127, 127)(g_rng));
  w->q = from_doubles(q, ws, DType::Int8);
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  for (int64_t j = 0; j < (per_channel ? ws[0] : 1); ++j) w->scales.push_back(scale(g_rng));
  w->per_channel = per_channel;
  w->per_row = per_row;
  if (bias) w->bias = values({ws[0]}, DType::Float32);
  return w;
}

Activation relu_or_clamp(int which) {
  Activation a;
  if (which == 1) a.kind = ActivationKind::Relu;
  if (which == 2) {
    a.kind = ActivationKind::Clamp;
    a.min = -0.5;
    a.max = 0.75;
  }
  return a;
}

// Dynamic int8: the reference runs the same quantization and exact int32 sums,
// so the outputs are equal.
std::vector<Case> qlinear_cases(DType dt) {
  std::vector<Case> cs;
  if (dt != DType::Float32) return cs;
  auto add = [&](std::string d, const Shape& xs, int64_t n, bool per_channel, bool bias, bool per_row, int act) {
    const int64_t k = xs.back();
    QLinearParams p;
    p.activation = relu_or_clamp(act);
    p.per_row_activations = per_row;
    Shape os = xs;
    os.back() = n;
    std::ostringstream name;
    name << d << " x" << shape_text(xs) << " w[" << n << ", " << k << "]" << (per_channel ? " per channel" : " per tensor")
         << (bias ? " bias" : "") << (per_row ? " per-row x" : "") << (act == 1 ? " relu" : act == 2 ? " clamp" : "");
    Case c{name.str(), {contig(values(xs, dt)), absent(), absent()}, {out_contig(os, dt)}, p, Family::Exact, k};
    c.qweight = quant_weight({n, k}, per_channel, bias, per_row);
    cs.push_back(std::move(c));
  };
  add("gemv", {1, 16}, 8, false, true, false, 0);
  add("small", {5, 33}, 17, true, true, false, 0);
  add("3-D input", {2, 3, 64}, 40, true, false, false, 1);
  add("per-row activations", {7, 48}, 24, true, true, true, 2);
  add("wide", {3, 300}, 65, false, true, true, 1);
  add("empty batch", {0, 8}, 4, true, true, false, 0);
  return cs;
}

std::vector<Case> qconv2d_cases(DType dt) {
  std::vector<Case> cs;
  if (dt != DType::Float32) return cs;
  auto add = [&](std::string d, const Shape& xs, int64_t cout, int64_t kh, int64_t kw, int64_t stride, int64_t pad,
                 int64_t dil, bool per_channel, bool bias, int act, bool channels_last = false) {
    QConv2dParams p;
    p.conv.stride[0] = p.conv.stride[1] = stride;
    p.conv.padding[0] = p.conv.padding[1] = pad;
    p.conv.dilation[0] = p.conv.dilation[1] = dil;
    p.conv.activation = relu_or_clamp(act);
    const Shape ws = {cout, xs[1], kh, kw};
    const Shape os = {xs[0], cout, conv_out(xs[2], kh, stride, pad, dil), conv_out(xs[3], kw, stride, pad, dil)};
    std::ostringstream name;
    name << d << " x" << shape_text(xs) << " w" << shape_text(ws) << " stride=" << stride << " padding=" << pad
         << " dilation=" << dil << (per_channel ? " per channel" : " per tensor") << (bias ? " bias" : "")
         << (act == 1 ? " relu" : act == 2 ? " clamp" : "") << (channels_last ? " channels_last" : "");
    Operand x = channels_last ? permuted(xs, {0, 2, 3, 1}, dt) : contig(values(xs, dt));
    Operand o = channels_last ? out_permuted(os, {0, 2, 3, 1}, dt) : out_contig(os, dt);
    Case c{name.str(), {std::move(x), absent(), absent()}, {std::move(o)}, p, Family::Exact, xs[1] * kh * kw};
    auto w = quant_weight(ws, per_channel, bias);
    w->conv = p.conv;
    c.qweight = std::move(w);
    cs.push_back(std::move(c));
  };
  add("1x1", {2, 8, 5, 6}, 17, 1, 1, 1, 0, 1, true, true, 0);
  add("3x3 padding", {1, 3, 7, 9}, 5, 3, 3, 1, 1, 1, false, true, 1);
  add("3x3 stride 2", {2, 3, 9, 7}, 6, 3, 3, 2, 1, 1, true, false, 2);
  add("3x3 dilation 2", {1, 4, 9, 9}, 3, 3, 3, 1, 2, 2, true, true, 0);
  add("3x2 stride 3", {2, 5, 8, 11}, 7, 3, 2, 3, 2, 1, false, false, 1);
  add("5x5 padding 2", {1, 16, 12, 10}, 32, 5, 5, 1, 2, 1, true, true, 2);
  add("empty batch", {0, 3, 7, 9}, 5, 3, 3, 1, 1, 1, true, true, 0);
  add("1x1", {2, 8, 5, 6}, 17, 1, 1, 1, 0, 1, true, true, 1, true);
  add("3x3 stride 2", {2, 3, 9, 7}, 6, 3, 3, 2, 1, 1, true, false, 2, true);
  add("5x5 padding 2", {1, 16, 12, 10}, 32, 5, 5, 1, 2, 1, false, true, 0, true);
  return cs;
}

// Conv2dPair: a 1x1 Conv2d then a depthwise one, channels_last (the executor's
// layout) or NCHW; the first expands to over 1 MB (the CPU kernel's bands of rows).
std::vector<Case> conv2d_pair_cases(DType dt) {
  std::vector<Case> cs;
  if (dt != DType::Float32) return cs;
  auto add = [&](std::string d, const Shape& xs, int64_t e, int64_t k, int64_t stride, int64_t pad, int64_t dil,
                 int act1, int act2, bool bias, bool channels_last) {
    Conv2dPairParams p;
    p.pointwise.activation = act1 == 3 ? Activation{ActivationKind::HardSwish} : relu_or_clamp(act1);
    p.depthwise.activation = act2 == 3 ? Activation{ActivationKind::HardSwish} : relu_or_clamp(act2);
    p.depthwise.stride[0] = p.depthwise.stride[1] = stride;
    p.depthwise.padding[0] = p.depthwise.padding[1] = pad;
    p.depthwise.dilation[0] = p.depthwise.dilation[1] = dil;
    p.depthwise.groups = e;
    const Shape os = {xs[0], e, conv_out(xs[2], k, stride, pad, dil), conv_out(xs[3], k, stride, pad, dil)};
    std::ostringstream name;
    name << d << " x" << shape_text(xs) << " to " << e << " channels, " << k << "x" << k << " stride=" << stride
         << " padding=" << pad << " dilation=" << dil << " activations " << act1 << "," << act2
         << (bias ? " biases" : "") << (channels_last ? " channels_last" : "");
    Operand x = channels_last ? permuted(xs, {0, 2, 3, 1}, dt) : contig(values(xs, dt));
    Operand o = channels_last ? out_permuted(os, {0, 2, 3, 1}, dt) : out_contig(os, dt);
    cs.push_back({name.str(),
                  {std::move(x), contig(values({e, xs[1], 1, 1}, dt)), bias ? contig(values({e}, dt)) : absent(),
                   contig(values({e, 1, k, k}, dt)), bias ? contig(values({e}, dt)) : absent()},
                  {std::move(o)}, p, Family::Accumulate, xs[1] * k * k});
  };
  add("banded", {1, 16, 48, 48}, 120, 3, 2, 1, 1, 2, 3, true, true);
  add("banded stride 1", {2, 8, 40, 56}, 128, 3, 1, 1, 1, 3, 1, false, true);
  add("banded 5x5", {1, 4, 45, 47}, 128, 5, 2, 2, 1, 0, 2, true, true);
  add("banded dilated", {1, 8, 44, 44}, 136, 3, 1, 2, 2, 1, 0, true, true);
  add("small", {2, 8, 7, 9}, 24, 3, 1, 1, 1, 2, 2, true, true);
  add("NCHW", {1, 8, 9, 7}, 20, 3, 2, 1, 1, 1, 3, false, false);
  add("empty batch", {0, 8, 9, 7}, 20, 3, 2, 1, 1, 1, 3, true, true);
  return cs;
}

// A random [n, k] COO weight (about `density` of it nonzero), values of `vt`:
// float32, float16, or int8 with scales (per channel: n) and zero points.
std::shared_ptr<QuantWeight> sparse_weight(int64_t n, int64_t k, double density, DType vt, DType it,
                                           bool per_channel = false, bool asymmetric = false) {
  auto w = std::make_shared<QuantWeight>();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> rows, cols, vals;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      if (unit(g_rng) >= density) continue;
      rows.push_back(static_cast<double>(r));
      cols.push_back(static_cast<double>(c));
      vals.push_back(vt == DType::Int8 ? static_cast<double>(std::uniform_int_distribution<int>(-127, 127)(g_rng))
                                       : normal(g_rng));
    }
  }
  const int64_t nnz = static_cast<int64_t>(vals.size());
  std::vector<double> idx(rows);
  idx.insert(idx.end(), cols.begin(), cols.end());
  w->indices = from_doubles(idx, {2, nnz}, it);
  w->q = from_doubles(vals, {nnz}, vt);
  w->rows = n;
  w->cols = k;
  if (vt == DType::Int8) {
    std::uniform_real_distribution<float> scale(0.001f, 0.02f);
    for (int64_t j = 0; j < (per_channel ? n : 1); ++j) {
      w->scales.push_back(scale(g_rng));
      if (asymmetric) w->zero_points.push_back(std::uniform_int_distribution<int>(-3, 3)(g_rng));
    }
  }
  return w;
}

// The sparse Linear: SpMM (CSR, or the blocked AVX-512 layout) against the
// densified weight summed in double (CUDA: exactly, see kExact).
std::vector<Case> sparse_linear_cases(DType dt) {
  std::vector<Case> cs;
  if (dt != DType::Float32) return cs;
  auto add = [&](std::string d, const Shape& xs, std::shared_ptr<QuantWeight> w, bool bias, int act = 0) {
    Shape os = xs;
    os.back() = w->rows;
    QLinearParams p;
    p.activation = relu_or_clamp(act);
    std::ostringstream name;
    name << d << " x" << shape_text(xs) << " w[" << w->rows << ", " << w->cols << "] " << dtype_name(w->q.dtype())
         << " nnz " << w->q.numel() << (bias ? " bias" : "") << (act == 1 ? " relu" : act == 2 ? " clamp" : "");
    Case c{name.str(), {contig(values(xs, dt)), absent(), bias ? contig(values({w->rows}, dt)) : absent()},
           {out_contig(os, dt)}, p, Family::Accumulate, w->cols};
    c.qweight = std::move(w);
    cs.push_back(std::move(c));
  };
  add("gemv", {1, 40}, sparse_weight(24, 40, 0.2, DType::Float32, DType::Int16), true);
  add("batch 5", {5, 70}, sparse_weight(33, 70, 0.1, DType::Float32, DType::Int32), false);
  add("3-D input", {2, 3, 64}, sparse_weight(48, 64, 0.3, DType::Float16, DType::Int64), true);
  add("int8 per channel", {4, 96}, sparse_weight(40, 96, 0.15, DType::Int8, DType::Int16, true), true);
  add("int8 per tensor", {9, 50}, sparse_weight(17, 50, 0.2, DType::Int8, DType::Int16), false);
  add("int8 asymmetric (dequantized)", {3, 32}, sparse_weight(16, 32, 0.25, DType::Int8, DType::Int16, true, true),
      true);
  add("mostly empty rows", {6, 30}, sparse_weight(40, 30, 0.02, DType::Float32, DType::Int16), true);
  add("dense rows, relu", {7, 45}, sparse_weight(20, 45, 0.9, DType::Float32, DType::Int32), true, 1);
  add("int8 clamp", {5, 64}, sparse_weight(24, 64, 0.3, DType::Int8, DType::Int16, true), false, 2);
  add("all zeros", {2, 20}, sparse_weight(8, 20, 0.0, DType::Float32, DType::Int16), true);
  add("all zeros, no bias", {2, 20}, sparse_weight(8, 20, 0.0, DType::Float32, DType::Int16), false);
  add("empty batch", {0, 20}, sparse_weight(8, 20, 0.3, DType::Float32, DType::Int16), true);
  add("no columns", {3, 0}, sparse_weight(5, 0, 0.3, DType::Float32, DType::Int16), true);
  return cs;
}

// PyTorch's pooling output size (runtime/ops/pooling.cc).
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

struct PoolSpec {
  const char* desc;
  Shape x;
  int64_t k, s, p, d;
  bool ceil_mode, count_include_pad;
  int64_t divisor_override;
  int layout;  // 0 contiguous, 1 channels_last, 2 stepped
};

Pool2dParams pool_params(const PoolSpec& ps) {
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = ps.k;
  p.stride[0] = p.stride[1] = ps.s;
  p.padding[0] = p.padding[1] = ps.p;
  p.dilation[0] = p.dilation[1] = ps.d;
  p.ceil_mode = ps.ceil_mode;
  p.count_include_pad = ps.count_include_pad;
  p.divisor_override = ps.divisor_override;
  return p;
}

std::string pool_desc(const PoolSpec& ps) {
  std::ostringstream d;
  d << ps.desc << " x" << shape_text(ps.x) << " kernel=" << ps.k << " stride=" << ps.s << " padding=" << ps.p
    << " dilation=" << ps.d << (ps.ceil_mode ? " ceil_mode" : "") << (ps.count_include_pad ? "" : " !count_include_pad")
    << (ps.divisor_override ? " divisor_override=" + std::to_string(ps.divisor_override) : "")
    << (ps.layout == 1 ? " channels_last" : ps.layout == 2 ? " stepped" : "");
  return d.str();
}

Shape pool_out_shape(const PoolSpec& ps) {
  return {ps.x[0], ps.x[1], pool_out(ps.x[2], ps.k, ps.p, ps.s, ps.d, ps.ceil_mode),
          pool_out(ps.x[3], ps.k, ps.p, ps.s, ps.d, ps.ceil_mode)};
}

Operand layout_operand(const Shape& s, int layout, DType dt, Dom dom = Dom::Normal) {
  return layout == 1 ? permuted(s, {0, 2, 3, 1}, dt, dom) : layout == 2 ? stepped(s, dt, dom) : contig(values(s, dt, dom));
}

std::vector<PoolSpec> pool_specs(bool is_max) {
  std::vector<PoolSpec> v = {
      {"2x2/2", {2, 3, 8, 8}, 2, 2, 0, 1, false, true, 0, 0},
      {"3x3/2 pad 1", {1, 3, 7, 9}, 3, 2, 1, 1, false, true, 0, 0},
      {"3x3/2 pad 1 ceil", {1, 2, 7, 9}, 3, 2, 1, 1, true, true, 0, 0},
      {"2x2/2 ceil odd", {2, 2, 7, 7}, 2, 2, 0, 1, true, true, 0, 0},
      {"3x3/1 pad 1", {1, 3, 5, 17}, 3, 1, 1, 1, false, true, 0, 0},
      {"3x3/2 channels_last", {2, 5, 7, 9}, 3, 2, 1, 1, false, true, 0, 1},
      {"2x2/1 stepped", {1, 3, 6, 7}, 2, 1, 0, 1, false, true, 0, 2},
      {"1x1", {1, 3, 3, 3}, 1, 1, 0, 1, false, true, 0, 0},
      {"window = input", {1, 2, 5, 5}, 5, 1, 0, 1, false, true, 0, 0},
      {"empty batch", {0, 3, 7, 7}, 2, 2, 0, 1, false, true, 0, 0},
  };
  if (is_max) {
    v.push_back({"3x3/1 dilation 2", {1, 2, 9, 9}, 3, 1, 1, 2, false, true, 0, 0});
    v.push_back({"2x2/2 dilation 2 ceil", {1, 2, 9, 8}, 2, 2, 1, 2, true, true, 0, 0});
    v.push_back({"3x3/2 pad 1 ceil", {2, 20, 9, 11}, 3, 2, 1, 1, true, true, 0, 1});
    v.push_back({"3x3/1 dilation 2", {1, 17, 9, 9}, 3, 1, 1, 2, false, true, 0, 1});
  } else {
    v.push_back({"3x3/2 pad 1 excl. pad", {1, 3, 7, 9}, 3, 2, 1, 1, false, false, 0, 0});
    v.push_back({"3x3/2 pad 1 ceil excl. pad", {1, 3, 8, 8}, 3, 2, 1, 1, true, false, 0, 0});
    v.push_back({"3x3/2 divisor_override 5", {1, 2, 7, 7}, 3, 2, 1, 1, false, true, 5, 0});
  }
  return v;
}

std::vector<Case> pool_cases(bool is_max, DType dt) {
  std::vector<Case> cs;
  for (const PoolSpec& ps : pool_specs(is_max)) {
    // Max pooling of a channels_last input into a channels_last output (the executor's layout).
    Operand o = is_max && ps.layout == 1 ? out_permuted(pool_out_shape(ps), {0, 2, 3, 1}, dt)
                                         : out_contig(pool_out_shape(ps), dt);
    cs.push_back({pool_desc(ps), {layout_operand(ps.x, ps.layout, dt)}, {std::move(o)}, pool_params(ps),
                  is_max ? Family::Exact : Family::Accumulate, ps.k * ps.k});
  }
  if (is_max && is_float(dt)) {
    PoolSpec ps{"NaN and inf windows", {1, 1, 3, 4}, 2, 2, 0, 1, false, true, 0, 0};
    cs.push_back({pool_desc(ps), {contig(specials(dt).reshape({1, 1, 3, 4}))}, {out_contig(pool_out_shape(ps), dt)},
                  pool_params(ps), Family::Exact, 4});
    // The same values as 3 channels of 2x2, channels_last: each channel's window holds a NaN or an inf.
    PoolSpec cl{"NaN and inf windows", {1, 3, 2, 2}, 2, 1, 0, 1, false, true, 0, 1};
    Operand x{specials(dt).reshape({1, 2, 2, 3}), [](const Tensor& b) { return b.permute({0, 3, 1, 2}); }, "permuted"};
    cs.push_back({pool_desc(cl), {std::move(x)}, {out_contig(pool_out_shape(cl), dt)}, pool_params(cl),
                  Family::Exact, 4});
  }
  return cs;
}

struct AdaptiveSpec {
  Shape x;
  int64_t oh, ow;
  int layout;
};

const std::vector<AdaptiveSpec> kAdaptive = {
    {{2, 3, 7, 9}, 1, 1, 0}, {{1, 3, 7, 9}, 3, 3, 0}, {{1, 2, 8, 10}, 4, 5, 0}, {{1, 2, 7, 9}, 2, 4, 1},
    {{1, 3, 5, 5}, 5, 5, 2}, {{1, 2, 3, 5}, 7, 6, 0}, {{0, 2, 4, 4}, 2, 2, 0},
};

std::vector<Case> adaptive_cases(DType dt) {
  std::vector<Case> cs;
  for (const AdaptiveSpec& a : kAdaptive) {
    Operand x = layout_operand(a.x, a.layout, dt);
    std::ostringstream d;
    d << "x" << shape_text(a.x) << " -> " << a.oh << "x" << a.ow << " " << x.layout;
    const int64_t k = ((a.x[2] + a.oh - 1) / a.oh + 1) * ((a.x[3] + a.ow - 1) / a.ow + 1);
    cs.push_back({d.str(), {std::move(x)}, {out_contig({a.x[0], a.x[1], a.oh, a.ow}, dt)}, NoParams{},
                  Family::Accumulate, k});
  }
  return cs;
}

struct EmbeddingSpec {
  int64_t v, d;
  Shape idx;
  int layout;  // 0 contiguous, 1 transposed indices, 2 transposed weight, 3 stepped indices
};

const std::vector<EmbeddingSpec> kEmbedding = {
    {10, 3, {5}, 0}, {17, 65, {2, 3}, 0}, {7, 1, {1}, 0}, {5, 4, {0}, 0}, {6, 0, {3}, 0},
    {9, 5, {4, 3}, 1}, {8, 6, {5}, 2}, {11, 7, {3, 4}, 3}, {3, 2, {2, 2, 3}, 0},
};

Operand embedding_indices(const EmbeddingSpec& e, DType it) {
  if (e.layout == 1) return transposed(e.idx, it, Dom::Index, e.v);
  if (e.layout == 3) return stepped(e.idx, it, Dom::Index, e.v);
  return contig(values(e.idx, it, Dom::Index, e.v));
}

std::string embedding_desc(const EmbeddingSpec& e, DType it) {
  std::ostringstream d;
  d << "weight [" << e.v << "," << e.d << "] indices " << shape_text(e.idx) << " " << dtype_name(it)
    << (e.layout == 1 ? " transposed indices" : e.layout == 2 ? " transposed weight" : e.layout == 3 ? " stepped indices" : "");
  return d.str();
}

std::vector<Case> embedding_cases(DType dt) {
  std::vector<Case> cs;
  for (DType it : {DType::Int64, DType::Int32}) {
    for (const EmbeddingSpec& e : kEmbedding) {
      Shape os = e.idx;
      os.push_back(e.d);
      Operand w = e.layout == 2 ? transposed({e.v, e.d}, dt) : contig(values({e.v, e.d}, dt));
      cs.push_back({embedding_desc(e, it), {std::move(w), embedding_indices(e, it)}, {out_contig(os, dt)}, NoParams{},
                    Family::Exact, 1});
    }
  }
  return cs;
}

struct PadSpec {
  PadMode mode;
  Shape x;
  std::vector<int64_t> before, after;
  double value;
  int layout;  // 0 contiguous, 1 transposed, 2 stepped, 3 channels_last (rank 4)
};

const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::Constant: return "constant";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
    case PadMode::Circular: return "circular";
  }
  return "?";
}

std::vector<PadSpec> pad_specs() {
  std::vector<PadSpec> v;
  for (PadMode m : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    v.push_back({m, {7}, {2}, {3}, 0.0, 0});
    v.push_back({m, {3, 5}, {0, 2}, {1, 4}, 1.5, 0});
    v.push_back({m, {2, 3, 7, 9}, {0, 0, 2, 1}, {0, 0, 1, 3}, -2.0, 0});
    v.push_back({m, {2, 3, 7, 9}, {0, 0, 1, 2}, {0, 0, 2, 2}, 0.0, 1});
    v.push_back({m, {2, 3, 4, 5, 6}, {0, 1, 2, 1, 3}, {0, 2, 1, 3, 1}, 0.0, 2});
    v.push_back({m, {1, 2, 6}, {0, 0, 5}, {0, 0, 5}, 0.0, 0});  // reflect: the largest pad
    v.push_back({m, {2, 3, 0}, {0, 0, 0}, {0, 0, 0}, 0.0, 0});
    v.push_back({m, {2, 3, 6, 7}, {0, 0, 3, 2}, {0, 0, 2, 1}, 0.0, 3});  // channels_last
    v.push_back({m, {1, 2, 257}, {0, 0, 5}, {0, 0, 1}, 0.0, 0});
    v.push_back({m, {1, 1, 6, 5}, {0, 0, 5, 4}, {0, 0, 5, 4}, 0.0, 0});
    v.push_back({m, {1, 2, 5, 4}, {0, 0, 2, -1}, {0, 0, -2, 2}, 0.0, 0});  // negative pads crop
  }
  // Negative pads crop (constant and circular).
  v.push_back({PadMode::Constant, {4, 9}, {-1, 2}, {1, -3}, 7.0, 0});
  v.push_back({PadMode::Circular, {3, 9}, {0, -2}, {0, 3}, 0.0, 0});
  v.push_back({PadMode::Constant, {0, 3}, {1, 1}, {2, 0}, 4.0, 0});
  return v;
}

PadParams pad_params(const PadSpec& ps) {
  PadParams p;
  p.mode = ps.mode;
  p.value = ps.value;
  for (size_t d = 0; d < ps.x.size(); ++d) {
    p.before[d] = ps.before[d];
    p.after[d] = ps.after[d];
  }
  return p;
}

Shape padded_shape(const PadSpec& ps) {
  Shape o = ps.x;
  for (size_t d = 0; d < o.size(); ++d) o[d] += ps.before[d] + ps.after[d];
  return o;
}

std::string pad_desc(const PadSpec& ps) {
  std::ostringstream d;
  d << pad_mode_name(ps.mode) << " x" << shape_text(ps.x) << " before" << shape_text(ps.before) << " after"
    << shape_text(ps.after) << (ps.mode == PadMode::Constant ? " value=" + std::to_string(ps.value) : "")
    << (ps.layout == 1 ? " transposed" : ps.layout == 2 ? " stepped" : ps.layout == 3 ? " channels_last" : "");
  return d.str();
}

Operand pad_operand(const Shape& s, int layout, DType dt) {
  return layout == 1   ? transposed(s, dt)
         : layout == 2 ? stepped(s, dt)
         : layout == 3 ? permuted(s, {0, 2, 3, 1}, dt)
                       : contig(values(s, dt));
}

std::vector<Case> pad_cases(DType dt) {
  std::vector<Case> cs;
  for (const PadSpec& ps : pad_specs()) {
    cs.push_back({pad_desc(ps), {pad_operand(ps.x, ps.layout, dt)}, {out_contig(padded_shape(ps), dt)}, pad_params(ps),
                  Family::Exact, 1});
  }
  return cs;
}

// ---- backward kernels: grad_out (and the forward input) -> grad_in, zeroed first

std::vector<Case> max_pool_backward_cases(DType dt) {
  std::vector<Case> cs;
  for (const PoolSpec& ps : pool_specs(true)) {
    Operand x = layout_operand(ps.x, ps.layout, dt);
    cs.push_back({pool_desc(ps), {contig(values(pool_out_shape(ps), dt)), std::move(x)}, {out_contig(ps.x, dt, 0.0)},
                  pool_params(ps), Family::Accumulate, ps.k * ps.k});
  }
  // A transposed (non-contiguous) grad_out.
  const PoolSpec ps{"3x3/2 pad 1, transposed grad", {1, 2, 7, 9}, 3, 2, 1, 1, false, true, 0, 0};
  cs.push_back({pool_desc(ps), {transposed(pool_out_shape(ps), dt), contig(values(ps.x, dt))},
                {out_contig(ps.x, dt, 0.0)}, pool_params(ps), Family::Accumulate, 9});
  // Ties (the first maximum takes the gradient) and NaN / inf in overlapping windows (the last NaN).
  const PoolSpec ties{"3x3/1 pad 1, values 0, 1, 2 (ties)", {1, 2, 5, 6}, 3, 1, 1, 1, false, true, 0, 0};
  std::vector<double> v(static_cast<size_t>(numel_of(ties.x)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i * 7 % 3);
  const PoolSpec nan{"2x2/1 NaN and inf windows", {1, 1, 3, 4}, 2, 1, 0, 1, false, true, 0, 0};
  for (const auto& [ps2, x] : {std::pair{ties, from_doubles(v, ties.x, dt)},
                               std::pair{nan, specials(dt).reshape({1, 1, 3, 4})}}) {
    Case c{pool_desc(ps2), {contig(values(pool_out_shape(ps2), dt)), contig(x)}, {out_contig(ps2.x, dt, 0.0)},
           pool_params(ps2), Family::Accumulate, 9};
    c.kinked = true;
    cs.push_back(std::move(c));
  }
  return cs;
}

std::vector<Case> avg_pool_backward_cases(DType dt) {
  std::vector<Case> cs;
  for (const PoolSpec& ps : pool_specs(false)) {
    cs.push_back({pool_desc(ps), {layout_operand(pool_out_shape(ps), ps.layout, dt)}, {out_contig(ps.x, dt, 0.0)},
                  pool_params(ps), Family::Accumulate, ps.k * ps.k});
  }
  return cs;
}

std::vector<Case> adaptive_backward_cases(DType dt) {
  std::vector<Case> cs;
  for (const AdaptiveSpec& a : kAdaptive) {
    const Shape gs = {a.x[0], a.x[1], a.oh, a.ow};
    Operand g = layout_operand(gs, a.layout, dt);
    std::ostringstream d;
    d << "x" << shape_text(a.x) << " <- " << a.oh << "x" << a.ow << " grad " << g.layout;
    const int64_t k = (a.oh / std::max<int64_t>(a.x[2], 1) + 2) * (a.ow / std::max<int64_t>(a.x[3], 1) + 2);
    cs.push_back({d.str(), {std::move(g)}, {out_contig(a.x, dt, 0.0)}, NoParams{}, Family::Accumulate, k});
  }
  return cs;
}

std::vector<Case> embedding_backward_cases(DType dt) {
  std::vector<Case> cs;
  for (DType it : {DType::Int64, DType::Int32}) {
    for (const EmbeddingSpec& e : kEmbedding) {
      Shape gs = e.idx;
      gs.push_back(e.d);
      Operand g = e.layout == 2 ? transposed(gs, dt) : contig(values(gs, dt));  // gs has rank >= 2
      // Repeated indices accumulate: K is how often one row can be hit.
      cs.push_back({embedding_desc(e, it), {std::move(g), embedding_indices(e, it)}, {out_contig({e.v, e.d}, dt, 0.0)},
                    NoParams{}, Family::Accumulate, std::max<int64_t>(numel_of(e.idx), 1)});
    }
  }
  // Every index the same row.
  const Tensor same = zeros({17}, DType::Int64);
  cs.push_back({"17 gradients into row 0", {contig(values({17, 3}, dt)), contig(same)}, {out_contig({4, 3}, dt, 0.0)},
                NoParams{}, Family::Accumulate, 17});
  return cs;
}

std::vector<Case> pad_backward_cases(DType dt) {
  std::vector<Case> cs;
  for (const PadSpec& ps : pad_specs()) {
    if (numel_of(ps.x) == 0 && ps.mode != PadMode::Constant) continue;  // nothing to read the gradient from
    cs.push_back({pad_desc(ps), {pad_operand(padded_shape(ps), ps.layout, dt)}, {out_contig(ps.x, dt, 0.0)},
                  pad_params(ps), Family::Accumulate, 8});
  }
  return cs;
}

// Copy: keyed by the source dtype; every destination dtype.
std::vector<Case> copy_cases(DType src) {
  std::vector<Case> cs;
  for (DType dst : kDTypes) {
    // float -> integer is undefined in C++ outside the destination's range: stay inside.
    const Dom dom = is_float(src) && !is_float(dst) && dst != DType::Bool ? Dom::Positive : Dom::Normal;
    const std::string to = std::string(" -> ") + std::string(dtype_name(dst));
    auto add = [&](std::string d, Operand x, Operand o) {
      cs.push_back({d + to, {std::move(x)}, {std::move(o)}, NoParams{}, Family::Exact, 1});
    };
    for (const Shape& s : std::vector<Shape>{{1}, {7}, {257}, {}, {0, 3}}) add(shape_text(s), contig(values(s, src, dom)), out_contig(s, dst));
    add("transposed [33,17]", transposed({33, 17}, src, dom), out_contig({33, 17}, dst));
    add("permuted [3,4,5,6]", permuted({3, 4, 5, 6}, {3, 1, 2, 0}, src, dom), out_contig({3, 4, 5, 6}, dst));
    add("stepped [5,9] into a stepped output", stepped({5, 9}, src, dom), out_stepped({5, 9}, dst));
    add("broadcast [3] -> [4,3]", expanded({3}, {4, 3}, src, dom), out_contig({4, 3}, dst));
    add("reversed 5 dims", permuted({2, 3, 2, 3, 2}, {4, 3, 2, 1, 0}, src, dom), out_contig({2, 3, 2, 3, 2}, dst));
    add("6 dims that merge to 2", permuted({2, 3, 2, 2, 3, 5}, {0, 1, 2, 3, 5, 4}, src, dom), out_contig({2, 3, 2, 2, 3, 5}, dst));
    if (is_float(src) && (is_float(dst) || dst == DType::Bool)) add("special values", contig(specials(src)), out_contig({12}, dst));
    if ((src == DType::Float32 || src == DType::Float64) && dst == DType::Int64) {
      add("beyond 32 bits", contig(from_doubles({3e9, -3e9, 1e15, 0.5, -0.5, -1e15}, {6}, src)), out_contig({6}, dst));
    }
    if (is_int(src) && (!is_int(dst) || dst == src || src == DType::Int64 || element_size(dst) > element_size(src))) {
      add("integer extremes", contig(extremes_tensor(src)), out_contig({8}, dst));
    }
  }
  return cs;
}

std::vector<Case> fill_cases(DType dt) {
  std::vector<Case> cs;
  std::vector<Scalar> vs = {Scalar(-2.5), Scalar(1.0 / 3.0), Scalar(int64_t{-7}), Scalar(int64_t{300}), Scalar(true)};
  if (dt == DType::Int64) vs.push_back(Scalar((int64_t{1} << 40) + 5));
  if (is_float(dt)) vs.push_back(Scalar(static_cast<double>(NAN)));
  for (const Scalar& v : vs) {
    std::ostringstream d;
    d << " value " << v.to<double>();
    for (const Shape& s : std::vector<Shape>{{1}, {7}, {257}, {}, {0}}) {
      cs.push_back({shape_text(s) + d.str(), {}, {out_contig(s, dt)}, ScalarParams{v}, Family::Exact, 1});
    }
    cs.push_back({"stepped [4,6]" + d.str(), {}, {out_stepped({4, 6}, dt)}, ScalarParams{v}, Family::Exact, 1});
  }
  return cs;
}

ClampParams clamp_params(bool has_min, bool has_max, Scalar lo, Scalar hi) {
  ClampParams p;
  p.has_min = has_min;
  p.has_max = has_max;
  p.min = lo;
  p.max = hi;
  return p;
}

// The cases of one (op, dtype): a switch over every OpKind, no default (a new
// op in ops.def without a case here does not compile).
// GatherElements / ScatterElements: index [2, 3, 4] (int64 and int32, some
// negative, contiguous and transposed) into data [3, 5, 4] along each axis.
std::vector<Case> index_cases(OpKind op, DType dt) {
  std::vector<Case> cs;
  const Shape data{3, 5, 4}, idx{2, 3, 4};
  for (DType it : {DType::Int64, DType::Int32}) {
    for (int64_t axis : {0, 1, -1}) {
      const int64_t n = data[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
      Tensor i = values(idx, it, Dom::Index, 2 * n) - n;  // in [-n, n)
      for (bool t : {false, true}) {
        Operand index = t ? Operand{i.transpose(0, 2).contiguous(), [](const Tensor& b) { return b.transpose(0, 2); },
                                    "transposed"}
                          : contig(i);
        std::ostringstream d;
        d << "axis " << axis << " index " << dtype_name(it) << " " << index.layout;
        if (op == OpKind::GatherElements) {
          cs.push_back({d.str(), {contig(values(data, dt)), index}, {out_contig(idx, dt)}, AxisParams{axis}});
          continue;
        }
        for (ScatterReduction r : {ScatterReduction::None, ScatterReduction::Add, ScatterReduction::Max}) {
          cs.push_back({d.str() + " reduction " + std::to_string(static_cast<int>(r)),
                        {transposed(data, dt), index, contig(values(idx, dt, Dom::Quantized))},
                        {out_contig(data, dt)}, ScatterParams{axis, r}});
        }
      }
    }
  }
  return cs;
}

// CumSum / CumProd along each axis, inclusive and exclusive, forward and reverse.
std::vector<Case> scan_cases(DType dt) {
  std::vector<Case> cs;
  const Shape x{3, 4, 5};
  for (int64_t axis : {0, 2, -2}) {
    for (int flags = 0; flags < 4; ++flags) {
      const ScanParams p{axis, (flags & 1) != 0, (flags & 2) != 0};
      cs.push_back({"axis " + std::to_string(axis) + " flags " + std::to_string(flags),
                    {flags == 3 ? transposed(x, dt, Dom::NearOne) : contig(values(x, dt, Dom::NearOne))},
                    {out_contig(x, dt)}, p, Family::Accumulate, 5});
    }
  }
  // Long lines (CUDA: a warp per line, scanning chunks of 32 with a carry), and a long strided axis.
  const Shape lx{3, 100};
  for (int flags = 0; flags < 4; ++flags) {
    const ScanParams p{1, (flags & 1) != 0, (flags & 2) != 0};
    cs.push_back({"[3,100] axis 1 flags " + std::to_string(flags), {contig(values(lx, dt, Dom::NearOne))},
                  {out_contig(lx, dt)}, p, Family::Accumulate, 100});
  }
  cs.push_back({"[70,3] axis 0", {contig(values({70, 3}, dt, Dom::NearOne))}, {out_contig({70, 3}, dt)},
                ScanParams{0, false, true}, Family::Accumulate, 70});
  // Lines past 8192 elements (CUDA: cut in chunks joined through the workspace).
  for (int flags : {0, 3}) {
    cs.push_back({"[2,9000] axis 1 flags " + std::to_string(flags), {contig(values({2, 9000}, dt, Dom::NearOne))},
                  {out_contig({2, 9000}, dt)}, ScanParams{1, flags == 3, flags == 3}, Family::Accumulate, 9000});
  }
  return cs;
}

// TopK of k = 3 (and every element: sort) along each axis; Quantized values have ties.
std::vector<Case> topk_cases(DType dt) {
  std::vector<Case> cs;
  const Shape x{4, 6, 5};
  for (int64_t axis : {0, 1, -1}) {
    const int64_t n = x[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
    for (int64_t k : {int64_t{3}, n}) {
      for (bool largest : {true, false}) {
        Shape o = x;
        o[static_cast<size_t>(axis < 0 ? axis + 3 : axis)] = k;
        cs.push_back({"axis " + std::to_string(axis) + " k " + std::to_string(k) + (largest ? " largest" : " smallest"),
                      {largest ? transposed(x, dt, Dom::Quantized) : contig(values(x, dt, Dom::Quantized))},
                      {out_contig(o, dt), out_contig(o, DType::Int64)}, TopKParams{axis, largest, true}});
      }
    }
  }
  // Lines longer than CUDA's shared-memory sort (2048 elements): its workspace path.
  for (bool largest : {true, false}) {
    cs.push_back({std::string("[2,2500] axis 1 k 7") + (largest ? " largest" : " smallest"),
                  {contig(values({2, 2500}, dt, Dom::Quantized))},
                  {out_contig({2, 7}, dt), out_contig({2, 7}, DType::Int64)}, TopKParams{1, largest, true}});
  }
  return cs;
}

// Resize: nearest (every mode of rounding and coordinates) on every dtype;
// linear, cubic, antialias, exclude_outside and tf_crop_and_resize on floats;
// 4-D NCHW (the CPU kernel's form), channels_last, a resized C, 3-D and 5-D.
std::vector<Case> resize_cases(DType dt) {
  std::vector<Case> cs;
  auto add = [&](std::string d, const Shape& xs, ResizeParams p, int layout = 0, int64_t k = 16) {
    p.rank = static_cast<int64_t>(xs.size());
    Shape os = xs;
    for (int i = 0; i < p.rank; ++i) os[static_cast<size_t>(i)] = p.output_size(i, xs[static_cast<size_t>(i)]);
    Operand x = layout == 1 ? permuted(xs, {0, 2, 3, 1}, dt) : layout == 2 ? stepped(xs, dt) : contig(values(xs, dt));
    cs.push_back({d + " x" + shape_text(xs) + " -> " + shape_text(os) + " x " + x.layout, {std::move(x)},
                  {out_contig(os, dt)}, p, is_float(dt) ? Family::Accumulate : Family::Exact, k});
  };
  auto scales = [](ResizeParams p, std::vector<double> s) {
    for (size_t i = 0; i < s.size(); ++i) p.scales[i] = s[i];
    return p;
  };
  auto sizes = [](ResizeParams p, std::vector<int64_t> s) {
    for (size_t i = 0; i < s.size(); ++i) p.sizes[i] = s[i], p.fixed |= 1u << i;
    return p;
  };
  ResizeParams nearest;
  nearest.coord = ResizeCoord::Asymmetric;
  nearest.nearest = NearestMode::Floor;
  add("nearest x2 asymmetric floor", {2, 3, 4, 5}, scales(nearest, {1, 1, 2, 2}));
  add("nearest x2 channels_last", {1, 3, 4, 5}, scales(nearest, {1, 1, 2, 2}), 1);
  for (NearestMode m : {NearestMode::RoundPreferFloor, NearestMode::RoundPreferCeil, NearestMode::Ceil}) {
    ResizeParams p;
    p.nearest = m;
    add("nearest half_pixel mode " + std::to_string(static_cast<int>(m)), {1, 2, 5, 7}, sizes(p, {1, 2, 8, 3}));
  }
  add("nearest 3-D, stepped", {2, 3, 6}, sizes(nearest, {2, 3, 13}), 2);
  // The CPU kernel's row copies (rows sharing a source row) across thread chunks, and
  // extrapolated rows and columns next to gathered ones.
  add("nearest x2, 240 output rows", {1, 3, 40, 50}, scales(nearest, {1, 1, 2, 2}));
  // Integer upscales along W (the CPU kernel replicates each value): x3 with
  // H x1.5, and PyTorch's half_pixel x2 (round_prefer_floor gives j / 2 too).
  add("nearest W x3, H x1.5", {1, 2, 6, 7}, scales(nearest, {1, 1, 1.5, 3}));
  ResizeParams half_pixel;
  half_pixel.nearest = NearestMode::RoundPreferFloor;
  add("nearest half_pixel x2", {1, 2, 5, 9}, scales(half_pixel, {1, 1, 2, 2}));
  ResizeParams tfn = nearest;
  tfn.coord = ResizeCoord::TfCropAndResize;
  tfn.extrapolation_value = 10.0;
  for (int i = 0; i < 4; ++i) tfn.roi_end[i] = 1.0;
  tfn.roi_start[2] = 0.4, tfn.roi_end[2] = 1.2, tfn.roi_start[3] = -0.2, tfn.roi_end[3] = 0.6;
  add("nearest tf_crop_and_resize", {1, 2, 4, 5}, sizes(tfn, {1, 2, 7, 9}));
  if (!is_float(dt)) return cs;
  ResizeParams lin;
  lin.mode = ResizeMode::Linear;
  for (ResizeCoord c : {ResizeCoord::HalfPixel, ResizeCoord::PytorchHalfPixel, ResizeCoord::AlignCorners,
                        ResizeCoord::Asymmetric, ResizeCoord::HalfPixelSymmetric}) {
    ResizeParams p = lin;
    p.coord = c;
    add("linear coord " + std::to_string(static_cast<int>(c)), {2, 3, 5, 6}, scales(p, {1, 1, 1.6, 0.7}));
  }
  add("linear sizes channels_last", {1, 4, 5, 6}, sizes(lin, {1, 4, 9, 4}), 1);
  add("linear x2, 240 output rows", {1, 3, 40, 50}, scales(lin, {1, 1, 2, 2}));  // the CPU kernel's row cache
  add("linear 5-D", {1, 2, 3, 4, 5}, scales(lin, {1, 1, 2, 1.5, 0.5}), 0, 8);
  add("linear resized channels", {1, 4, 3, 3}, scales(lin, {1, 1.5, 1, 2}));
  ResizeParams cub;
  cub.mode = ResizeMode::Cubic;
  add("cubic half_pixel", {1, 3, 5, 6}, scales(cub, {1, 1, 1.8, 0.6}));
  cub.exclude_outside = true;
  cub.cubic_coeff_a = -0.5;
  add("cubic exclude_outside a=-0.5", {1, 2, 4, 4}, sizes(cub, {1, 2, 7, 3}), 2);
  ResizeParams aa = lin;
  aa.antialias = true;
  add("linear antialias", {1, 2, 9, 8}, scales(aa, {1, 1, 0.4, 0.6}), 0, 64);
  aa.mode = ResizeMode::Cubic;
  add("cubic antialias", {1, 2, 9, 8}, sizes(aa, {1, 2, 4, 3}), 0, 64);
  ResizeParams tf = lin;
  tf.coord = ResizeCoord::TfCropAndResize;
  tf.extrapolation_value = 10.0;
  for (int i = 0; i < 4; ++i) tf.roi_end[i] = 1.0;
  tf.roi_start[2] = 0.4, tf.roi_end[2] = 1.2, tf.roi_start[3] = -0.2, tf.roi_end[3] = 0.6;
  add("tf_crop_and_resize", {1, 2, 4, 5}, sizes(tf, {1, 2, 3, 6}));
  return cs;
}

// ConvTranspose 1-D to 3-D: strides, asymmetric pads, output_padding,
// dilations, groups, bias or none, a non-contiguous input.
std::vector<Case> conv_transpose_cases(DType dt) {
  std::vector<Case> cs;
  const Family f = is_float(dt) ? Family::Accumulate : Family::Exact;
  auto add = [&](std::string d, const Shape& xs, int64_t cout_g, const Shape& k, std::vector<int64_t> st,
                 std::vector<int64_t> pb, std::vector<int64_t> pe, std::vector<int64_t> op, std::vector<int64_t> dil,
                 int64_t groups, bool bias, bool strided = false) {
    ConvTransposeParams p;
    p.groups = groups;
    Shape ws = {xs[1], cout_g};
    Shape os = {xs[0], cout_g * groups};
    int64_t taps = 1;
    for (size_t i = 0; i < k.size(); ++i) {
      p.stride[i] = st[i], p.pad_begin[i] = pb[i], p.pad_end[i] = pe[i], p.output_padding[i] = op[i], p.dilation[i] = dil[i];
      ws.push_back(k[i]);
      os.push_back((xs[2 + i] - 1) * st[i] + dil[i] * (k[i] - 1) + 1 + op[i] - pb[i] - pe[i]);
      taps *= k[i];
    }
    Operand x = strided ? stepped(xs, dt) : contig(values(xs, dt));
    cs.push_back({d + " x" + shape_text(xs) + " w" + shape_text(ws) + " x " + x.layout,
                  {std::move(x), contig(values(ws, dt)), bias ? contig(values({cout_g * groups}, dt)) : absent()},
                  {out_contig(os, dt)}, p, f, taps * xs[1] / groups});
  };
  add("2-D 3x3 stride 2 pad 1 output_padding 1", {2, 3, 5, 4}, 4, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, true);
  add("2-D 2x2 stride 2 (upsampling)", {1, 8, 4, 4}, 5, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {0, 0}, {1, 1}, 1, false);
  add("2-D asymmetric pads, dilation 2", {1, 2, 4, 5}, 3, {3, 2}, {1, 3}, {0, 2}, {1, 0}, {0, 1}, {2, 1}, 1, true);
  add("2-D groups 2", {2, 4, 3, 3}, 3, {3, 3}, {2, 1}, {1, 0}, {0, 1}, {0, 0}, {1, 1}, 2, true);
  // The CPU kernel's depthwise path, and its stride-2 tap pairs over rows wide
  // enough for their vector loop, cut at both edges by the pads.
  add("2-D depthwise 4x4 stride 2 pad 1", {2, 6, 5, 20}, 1, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 6, true);
  add("2-D 4x4 stride 2 pads 3 / 2, 33 wide", {1, 3, 3, 33}, 2, {4, 4}, {2, 2}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1,
      false);
  add("2-D stepped input", {1, 3, 4, 4}, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true);
  add("1-D", {2, 3, 7}, 2, {4}, {3}, {1}, {2}, {2}, {1}, 1, true);
  add("3-D", {1, 2, 3, 2, 3}, 2, {2, 3, 2}, {2, 1, 2}, {0, 1, 1}, {1, 0, 0}, {1, 0, 0}, {1, 1, 1}, 1, true);
  add("2-D negative pad (output_shape beyond the full output)", {1, 2, 3, 3}, 2, {3, 3}, {2, 2}, {0, 0}, {-1, -2},
      {0, 0}, {1, 1}, 1, true);
  return cs;
}

// GridSample 2-D and 3-D: every mode, padding and align_corners; the grid
// reaches past [-1, 1] (padding) and is non-contiguous in one case.
std::vector<Case> grid_sample_cases(DType dt) {
  std::vector<Case> cs;
  for (int nd : {2, 3}) {
    const Shape xs = nd == 2 ? Shape{2, 3, 4, 5} : Shape{1, 2, 3, 4, 3};
    const Shape gs = nd == 2 ? Shape{2, 3, 6, 2} : Shape{1, 2, 3, 2, 3};
    Shape os = {xs[0], xs[1]};
    os.insert(os.end(), gs.begin() + 1, gs.end() - 1);
    for (ResizeMode m : {ResizeMode::Nearest, ResizeMode::Linear, ResizeMode::Cubic}) {
      for (GridPadding pad : {GridPadding::Zeros, GridPadding::Border, GridPadding::Reflection}) {
        for (bool align : {false, true}) {
          GridSampleParams p;
          p.mode = m, p.padding = pad, p.align_corners = align;
          Tensor g = values(gs, dt, Dom::Unit) * 1.6;
          const bool t = align && pad == GridPadding::Border;
          cs.push_back({std::to_string(nd) + "-D mode " + std::to_string(static_cast<int>(m)) + " padding " +
                            std::to_string(static_cast<int>(pad)) + (align ? " align_corners" : ""),
                        {contig(values(xs, dt)), t ? stepped(gs, dt, Dom::Unit) : contig(g)}, {out_contig(os, dt)}, p,
                        Family::Accumulate, nd == 2 ? 16 : 64});
        }
      }
    }
  }
  return cs;
}

// LSTM, GRU (both linear_before_reset) and RNN (tanh, relu): one and two
// directions, reverse, every optional operand given or absent, clip, sequence
// lengths below the full one (masked steps), batches past the unpacked GEMM
// path's 64 rows, a stepped x (the CPU kernel's reference fallback).
std::vector<Case> recurrence_cases(DType dt) {
  std::vector<Case> cs;
  struct Form {
    const char* what;
    int64_t cell, dirs;
    bool reverse, lbr, relu, input_forget, bias, lens, h0, c0, peep, stepped;
    double clip;
    int64_t T, B, I, H;
  };
  const Form forms[] = {
      {"LSTM", 0, 1, false, false, false, false, true, false, false, false, false, false, 0.0, 5, 2, 3, 4},
      {"LSTM bidirectional, states, peepholes, lengths", 0, 2, false, false, false, false, true, true, true, true,
       true, false, 0.0, 4, 3, 5, 3},
      {"LSTM reverse, clip 0.7, input_forget, no bias", 0, 1, true, false, false, true, false, false, true, false,
       false, false, 0.7, 6, 2, 2, 5},
      {"LSTM batch 70 (the blocked GEMM per step)", 0, 1, false, false, false, false, true, false, true, true, false,
       false, 0.0, 3, 70, 4, 6},
      {"GRU", 1, 1, false, false, false, false, true, false, true, false, false, false, 0.0, 5, 2, 3, 4},
      {"GRU linear_before_reset, bidirectional, lengths", 1, 2, false, true, false, false, true, true, true, false,
       false, false, 0.0, 4, 3, 2, 3},
      {"GRU reverse, clip 0.5, no bias", 1, 1, true, false, false, false, false, false, false, false, false, false,
       0.5, 3, 1, 4, 7},
      {"RNN tanh, stepped x", 2, 1, false, false, false, false, true, false, true, false, false, true, 0.0, 4, 2, 3, 5},
      {"RNN relu bidirectional, lengths", 2, 2, false, false, true, false, true, true, false, false, false, false, 0.0,
       5, 3, 2, 4},
      // Enough work per step for the CPU kernel's chunks of hidden units (two
      // on two threads, of 32 + 16, 80 + 70, 16 + 24 and 80 + 80 units).
      {"LSTM batch 8, hidden 48, peepholes, lengths (chunks of units)", 0, 2, false, false, false, false, true, true,
       true, true, true, false, 0.0, 4, 8, 3, 48},
      {"GRU batch 1, hidden 150, lengths (chunks, the second product)", 1, 1, true, false, false, false, true, true,
       true, false, false, false, 0.0, 3, 1, 4, 150},
      {"GRU linear_before_reset, batch 70, hidden 40 (chunks, blocked GEMM)", 1, 1, false, true, false, false, true,
       false, true, false, false, false, 0.0, 2, 70, 3, 40},
      {"RNN tanh batch 3, hidden 160, lengths (chunks)", 2, 1, false, false, false, false, true, true, false, false,
       false, false, 0.0, 3, 3, 2, 160},
  };
  for (const Form& f : forms) {
    RecurrenceParams p;
    p.cell = f.cell, p.directions = f.dirs, p.reverse = f.reverse, p.hidden = f.H, p.clip = f.clip;
    p.linear_before_reset = f.lbr, p.input_forget = f.input_forget, p.relu = f.relu;
    const int64_t GH = p.gates() * f.H;
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < f.B; ++b) lens.push_back(std::max<int64_t>(0, f.T - b));  // T, T-1, ... (one full)
    const Shape xs = {f.T, f.B, f.I};
    auto scaled = [&](const Shape& s) { return contig(values(s, dt, Dom::Unit) * 0.5); };
    cs.push_back({f.what,
                  {f.stepped ? stepped(xs, dt, Dom::Unit) : contig(values(xs, dt, Dom::Unit)), scaled({f.dirs, GH, f.I}),
                   scaled({f.dirs, GH, f.H}), f.bias ? scaled({f.dirs, 2 * GH}) : absent(),
                   f.lens ? contig(tensor(lens, {f.B}).to(DType::Int32)) : absent(),
                   f.h0 ? scaled({f.dirs, f.B, f.H}) : absent(), f.c0 ? scaled({f.dirs, f.B, f.H}) : absent(),
                   f.peep ? scaled({f.dirs, 3 * f.H}) : absent()},
                  {out_contig({f.T, f.dirs, f.B, f.H}, dt), out_contig({f.dirs, f.B, f.H}, dt),
                   f.cell == 0 ? out_contig({f.dirs, f.B, f.H}, dt) : absent()},
                  p, Family::Accumulate, f.T * (f.I + f.H)});
  }
  return cs;
}

std::vector<Case> cases_for(OpKind op, DType dt) {
  const DType cmp = DType::Bool;
  switch (op) {
    case OpKind::Copy: return copy_cases(dt);
    case OpKind::Fill: return fill_cases(dt);
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Relu: return unary_cases(dt, Dom::Normal, Family::Exact, NoParams{}, "");
    case OpKind::Exp:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Silu:
    case OpKind::Erf: return unary_cases(dt, Dom::Normal, Family::Elementwise, NoParams{}, "");
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Rsqrt: return unary_cases(dt, Dom::Positive, Family::Elementwise, NoParams{}, "");
    case OpKind::Gelu: {
      std::vector<Case> cs;
      for (bool t : {false, true}) {
        GeluParams p;
        p.tanh_approximation = t;
        for (Case& c : unary_cases(dt, Dom::Normal, Family::Elementwise, p, t ? "tanh " : "none ")) cs.push_back(std::move(c));
      }
      return cs;
    }
    case OpKind::Clamp: {
      std::vector<Case> cs;
      const bool f = is_float(dt);
      const bool u = dt == DType::UInt8;
      const std::vector<std::pair<std::string, ClampParams>> ps = {
          {"min and max ", f ? clamp_params(true, true, -0.5, 0.7) : clamp_params(true, true, u ? 2 : -3, 5)},
          {"min ", f ? clamp_params(true, false, -0.2, 0) : clamp_params(true, false, 2, 0)},
          {"max ", f ? clamp_params(false, true, 0, 0.3) : clamp_params(false, true, 0, u ? 4 : -4)},
          {"min > max ", f ? clamp_params(true, true, 0.5, -0.5) : clamp_params(true, true, 4, 1)},
      };
      for (const auto& [name, p] : ps) {
        for (Case& c : unary_cases(dt, Dom::Normal, Family::Exact, p, name)) cs.push_back(std::move(c));
      }
      if (dt == DType::Int64) {
        const ClampParams big = clamp_params(true, true, -(int64_t{1} << 41), int64_t{1} << 35);
        cs.push_back({"bounds beyond 32 bits, integer extremes", {contig(extremes_tensor(dt))}, {out_contig({8}, dt)}, big,
                      Family::Exact, 1});
      }
      if (f) {
        for (Case& c : unary_cases(dt, Dom::Normal, Family::Exact, clamp_params(true, true, NAN, 1.0), "NaN min ")) {
          cs.push_back(std::move(c));
        }
      }
      return cs;
    }
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Maximum:
    case OpKind::Minimum: return binary_cases(op, dt, dt, Dom::Quantized, Family::Exact);
    case OpKind::Div: return binary_cases(op, dt, dt, Dom::Normal, Family::Elementwise);
    case OpKind::Pow: return pow_cases(dt);
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge: return binary_cases(op, dt, cmp, Dom::Quantized, Family::Exact);
    case OpKind::Where: return where_cases(dt);
    // The RT_BINARY ops: exact (integer division by zero gives 0; shifts past the width).
    case OpKind::Remainder:
    case OpKind::Fmod:
    case OpKind::FloorDivide:
    case OpKind::TruncDivide:
    case OpKind::BitwiseAnd:
    case OpKind::BitwiseOr:
    case OpKind::BitwiseXor:
    case OpKind::BitwiseLeftShift:
    case OpKind::BitwiseRightShift: return binary_cases(op, dt, dt, Dom::Quantized, Family::Exact);
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Prod:
    case OpKind::Var:
    case OpKind::Norm:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::ArgMax:
    case OpKind::ArgMin: return reduce_cases(op, dt);
    case OpKind::MatMul: return matmul_cases(dt);
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return softmax_cases(dt);
    case OpKind::ScaledDotProductAttention: return attention_cases(dt);
    case OpKind::LayerNorm: return layer_norm_cases(dt);
    case OpKind::AddLayerNorm: return add_layer_norm_cases(dt);
    case OpKind::BatchNorm: return batch_norm_cases(dt);
    case OpKind::Conv2d: return conv2d_cases(dt);
    case OpKind::MaxPool2d: return pool_cases(true, dt);
    case OpKind::AvgPool2d: return pool_cases(false, dt);
    case OpKind::AdaptiveAvgPool2d: return adaptive_cases(dt);
    case OpKind::Embedding: return embedding_cases(dt);
    case OpKind::Pad: return pad_cases(dt);
    case OpKind::MaxPool2dBackward: return max_pool_backward_cases(dt);
    case OpKind::AvgPool2dBackward: return avg_pool_backward_cases(dt);
    case OpKind::AdaptiveAvgPool2dBackward: return adaptive_backward_cases(dt);
    case OpKind::EmbeddingBackward: return embedding_backward_cases(dt);
    case OpKind::PadBackward: return pad_backward_cases(dt);
    // Graph ops: no kernel of their own (the executor runs them through the
    // eager front-ends), so no kernel entry asks for their cases.
    case OpKind::Reshape:
    case OpKind::Permute:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Concat:
    case OpKind::Split:
    case OpKind::Slice:
    case OpKind::Gather:
    case OpKind::Expand:
    case OpKind::ShapeOf:
    case OpKind::ConstantOfShape:
    case OpKind::Range:
    case OpKind::BitCast:
    case OpKind::Linear:
    case OpKind::NonZero:
    case OpKind::Unique:
    // NonMaxSuppression runs on the host (no kernel); RoiAlign, DFT, STFT,
    // AffineGrid, Col2Im, MaxUnpool, MaxPool2dIndices and DeformConv have only
    // reference kernels (checked by tests/converter/lower_detect_test.cc,
    // tests/ops/pooling_test.cc, tests/ops/spatial_test.cc and the ONNX
    // conformance cases), which the suite
    // compares nothing against. If, Loop and Scan run subgraphs on the host.
    case OpKind::NonMaxSuppression:
    case OpKind::RoiAlign:
    case OpKind::DFT:
    case OpKind::STFT:
    case OpKind::AffineGrid:
    case OpKind::Col2Im:
    case OpKind::MaxUnpool:
    case OpKind::MaxPool2dIndices:
    case OpKind::DeformConv:
    case OpKind::If:
    case OpKind::Loop:
    case OpKind::Scan: return {};
    case OpKind::GatherElements:
    case OpKind::ScatterElements: return index_cases(op, dt);
    case OpKind::CumSum:
    case OpKind::CumProd: return scan_cases(dt);
    case OpKind::TopK: return topk_cases(dt);
    case OpKind::Resize: return resize_cases(dt);
    case OpKind::ConvTranspose: return conv_transpose_cases(dt);
    case OpKind::GridSample: return grid_sample_cases(dt);
    case OpKind::Recurrence: return recurrence_cases(dt);
    // Run-time ops: the weight prepared by each backend (Case::qweight).
    case OpKind::QLinear: return qlinear_cases(dt);
    case OpKind::QConv2d: return qconv2d_cases(dt);
    case OpKind::SparseLinear: return sparse_linear_cases(dt);
    case OpKind::Conv2dPair: return conv2d_pair_cases(dt);
    // Rounding and sign: exact; Quantized inputs have halves (round's ties to even).
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Round:
    case OpKind::Sign: return unary_cases(dt, Dom::Quantized, Family::Exact, NoParams{}, "");
    case OpKind::Reciprocal:
    case OpKind::Tan:
    case OpKind::Atan:
    case OpKind::Sinh:
    case OpKind::Cosh:
    case OpKind::Asinh:
    case OpKind::Softsign:
    case OpKind::Mish:
    case OpKind::Softplus:
    case OpKind::Expm1: return unary_cases(dt, Dom::Normal, Family::Elementwise, NoParams{}, "");
    case OpKind::Asin:
    case OpKind::Acos:
    case OpKind::Atanh:
    case OpKind::Log1p: return unary_cases(dt, Dom::Unit, Family::Elementwise, NoParams{}, "");
    case OpKind::Acosh: return unary_cases(dt, Dom::AboveOne, Family::Elementwise, NoParams{}, "");
    case OpKind::Hardswish: return unary_cases(dt, Dom::Normal, Family::Elementwise, NoParams{}, "");
    // The RT_UNARY_P ops: with ONNX's default params and with others.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...)
#define RT_UNARY_P(Name, name, dtypes, formula, onnx, attr_a, default_a, attr_b, default_b, ...) \
  case OpKind::Name:                                                                             \
    return unary_p_cases(dt, default_a, default_b);
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
  }
  return {};
}

}  // namespace

// ---- running one case -------------------------------------------------------------

namespace {

std::string op_str(OpKind op) { return std::string(op_name(op)); }
std::string dtype_str(DType t) { return std::string(dtype_name(t)); }

// A copy of the CPU base on the backend's device (a fresh CPU clone for the CPU).
Tensor on_device(const Tensor& base, Backend* backend) {
  if (backend->device_type() == DeviceType::CPU) return base.clone();
  return base.to(Device(backend->device_type()));
}

std::vector<TensorView> views_of(const std::vector<Tensor>& ts) {
  std::vector<TensorView> v;
  for (const Tensor& t : ts) v.push_back(t.defined() ? t.kernel_view() : TensorView{});
  return v;
}

// Calls an entry as run_kernel does: workspace when it asks for one,
// contiguous inputs when it says so (a Copy on the device first).
Status call_entry(const KernelEntry& e, std::vector<Tensor> in, std::vector<Tensor>& out, const OpParams& params,
                  int threads) {
  if (e.contiguous_inputs) {
    for (Tensor& t : in) {
      if (t.defined() && !t.is_contiguous()) t = t.contiguous();
    }
  }
  const std::vector<TensorView> iv = views_of(in);
  std::vector<TensorView> ov = views_of(out);
  const Span<const TensorView> ins(iv.data(), iv.size());
  const Span<TensorView> outs(ov.data(), ov.size());
  KernelContext ctx;
  ctx.num_threads = threads;
  Tensor scratch;  // on the kernel's device
  if (e.workspace != nullptr) {
    ctx.scratch_bytes = e.workspace(ins, Span<const TensorView>(ov.data(), ov.size()), params);
    Device device("cpu");
    for (const Tensor& t : in) {
      if (t.defined()) device = t.device();
    }
    scratch = empty({static_cast<int64_t>(ctx.scratch_bytes + kTensorTailPadding)},
                    TensorOptions(DType::UInt8).device(device));
    ctx.scratch = scratch.data_ptr();
  }
  return e.fn(ctx, ins, outs, params);
}

// Compares an output with the reference's; `bound` 0: exact. NaN and inf
// positions must match. Returns the largest error through `max_err`.
bool compare(const Tensor& got, const Tensor& want, double bound, double* max_err, std::string* why) {
  *max_err = 0.0;
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype()) {
    *why = "shape/dtype " + shape_str(got.sizes()) + " vs " + shape_str(want.sizes());
    return false;
  }
  if (!is_floating(want.dtype())) {
    const std::vector<int64_t> a = got.to(DType::Int64).contiguous().to_vector<int64_t>();
    const std::vector<int64_t> b = want.to(DType::Int64).contiguous().to_vector<int64_t>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) {
        *max_err = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        *why = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs reference " + std::to_string(b[i]);
        return false;
      }
    }
    return true;
  }
  const std::vector<double> a = got.to(DType::Float64).contiguous().to_vector<double>();
  const std::vector<double> b = want.to(DType::Float64).contiguous().to_vector<double>();
  bool ok = true;
  size_t worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double err;
    if (std::isnan(b[i]) || std::isinf(b[i]) || !std::isfinite(a[i])) {
      const bool same = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i];
      err = same ? 0.0 : INFINITY;
    } else {
      err = std::fabs(a[i] - b[i]) / (std::fabs(b[i]) + 1.0);
    }
    if (err > *max_err) {
      *max_err = err;
      worst = i;
    }
    if (err > bound) ok = false;
  }
  if (!ok) {
    std::ostringstream m;
    m.precision(10);
    m << "element " << worst << ": " << a[worst] << " vs reference " << b[worst] << " (error " << *max_err
      << ", bound " << bound << ")";
    *why = m.str();
  }
  return ok;
}

enum class Outcome { Pass, Skip, Fail };

struct CaseResult {
  Outcome result = Outcome::Pass;
  std::string message;
  double max_err = 0.0;
  double stepwise_err = 0.0;  // rounds_each_step: against the step-rounded reference (not asserted)
};

// The reference kernel on CPU copies with the case's views; `as` (when set)
// runs it on copies converted to that dtype and converts the outputs back.
Status run_reference(const KernelEntry& ref, const Case& c, std::vector<Tensor>* out_bases,
                     std::optional<DType> as = std::nullopt) {
  auto conv = [&](const Tensor& t) { return as && is_floating(t.dtype()) ? t.to(*as) : t.clone(); };
  std::vector<Tensor> in, out, bases;
  for (const Operand& o : c.in) {
    bases.push_back(o.base.defined() ? conv(o.base) : Tensor());
    in.push_back(o.base.defined() ? o.apply(bases.back()) : Tensor());
  }
  if (c.inplace) {
    out = {in[0]};
    bases.resize(1);
  } else {
    bases.clear();
    for (const Operand& o : c.out) {  // an absent output (an omitted optional one) stays undefined
      bases.push_back(o.base.defined() ? conv(o.base) : Tensor());
      out.push_back(o.base.defined() ? o.apply(bases.back()) : Tensor());
    }
  }
  std::shared_ptr<const PreparedWeight> prepared;
  if (c.qweight != nullptr) {
    Result<std::shared_ptr<const PreparedWeight>> r = ref::prepare_weight(ref.op, c.qweight->desc());
    if (!r.ok()) return r.status();
    prepared = std::move(r.get());
  }
  const Status s = call_entry(ref, in, out, with_weight(c.params, prepared.get()), 1);
  const std::vector<Operand>& outs = c.inplace ? c.in : c.out;
  out_bases->clear();
  for (size_t k = 0; k < bases.size(); ++k) {
    out_bases->push_back(as && bases[k].defined() ? bases[k].to(outs[k].base.dtype()) : bases[k]);
  }
  return s;
}

// The 16-bit floats' MatMul reference accumulates as PyTorch's CPU gemm:
// rounding every product and partial sum to the 16-bit type, or a float dot
// rounded once when b is K-contiguous (kernels/ref/matmul.cc), and so do the
// backward kernels that accumulate into their output (each `+=` rounded to the
// 16-bit type, in the reference's order); a backend accumulating in float32 (as
// the Vulkan shaders and PyTorch's CUDA kernels do; the CUDA backward kernels
// sum in a float32 copy, in the atomics' order, and round once) is compared with
// the reference run in float32 and rounded once. The difference from the
// step-rounded reference is printed beside the entry, not asserted.
bool rounds_each_step(OpKind op, DType dt) {
  if (dt != DType::Float16 && dt != DType::BFloat16) return false;
  switch (op) {
    case OpKind::MatMul:
    case OpKind::MaxPool2dBackward:
    case OpKind::AvgPool2dBackward:
    case OpKind::AdaptiveAvgPool2dBackward:
    case OpKind::EmbeddingBackward:
    case OpKind::PadBackward: return true;
    case OpKind::Conv2d: return dt == DType::BFloat16;  // as PyTorch 1.13's CPU slow_conv2d (kernels/ref/conv2d.cc)
    default: return false;
  }
}

// Bounds a backend's arithmetic is known not to meet: named, printed in the
// summary, never silent.
struct Relaxation {
  const char* backend;
  OpKind op;
  DType dtype;
  double bound;
  const char* why;
};
constexpr Relaxation kRelaxations[] = {
    {"vulkan", OpKind::Exp, DType::Float32, 2e-6,
     "GLSL exp() on lavapipe is 1.18e-6 (about 12 ulp) off at x = 30; the Vulkan spec allows 3 + 2|x| ulp"},
};

// Kernels held to the reference bit for bit where the case's family allows
// rounding differences: they sum in the reference's precision and order.
struct Exactness {
  const char* backend;
  OpKind op;
};
constexpr Exactness kExact[] = {
    {"cuda", OpKind::SparseLinear},  // double, column order (kernels/cuda/sparse.cu.cc)
};

bool held_exact(const Backend* b, OpKind op) {
  for (const Exactness& e : kExact) {
    if (b->name() == e.backend && e.op == op) return true;
  }
  return false;
}

const Relaxation* relaxation(const Backend* b, OpKind op, DType dt) {
  for (const Relaxation& r : kRelaxations) {
    if (b->name() == r.backend && r.op == op && r.dtype == dt) return &r;
  }
  return nullptr;
}

CaseResult run_case(const KernelEntry& entry, Backend* backend, const Case& c, DType dt) {
  CaseResult r;
  const KernelEntry* ref = ref_kernel(entry.op, dt);
  if (ref == nullptr) {
    r.result = Outcome::Fail;
    r.message = "no reference kernel";
    return r;
  }
  std::vector<Tensor> ref_out_base, stepwise_base;
  const bool upcast = rounds_each_step(entry.op, dt);
  const Status rs = upcast ? run_reference(*ref_kernel(entry.op, DType::Float32), c, &ref_out_base, DType::Float32)
                           : run_reference(*ref, c, &ref_out_base);
  if (rs != Status::Ok || (upcast && run_reference(*ref, c, &stepwise_base) != Status::Ok)) {
    r.result = Outcome::Fail;
    r.message = "the reference kernel returned " + std::string(status_name(rs)) + " (a bad case)";
    return r;
  }
  // The backend's kernel on device copies, the views made on the device.
  std::vector<Tensor> dev_in, dev_out_base, dev_out;
  for (const Operand& o : c.in) {
    dev_out_base.push_back(o.base.defined() ? on_device(o.base, backend) : Tensor());
    dev_in.push_back(o.base.defined() ? o.apply(dev_out_base.back()) : Tensor());
  }
  if (c.inplace) {
    dev_out = {dev_in[0]};
    dev_out_base.resize(1);
  } else {
    dev_out_base.clear();
    for (const Operand& o : c.out) {
      dev_out_base.push_back(o.base.defined() ? on_device(o.base, backend) : Tensor());
      dev_out.push_back(o.base.defined() ? o.apply(dev_out_base.back()) : Tensor());
    }
  }
  std::shared_ptr<const PreparedWeight> prepared;
  if (c.qweight != nullptr) {
    Result<std::shared_ptr<const PreparedWeight>> pw = backend->prepare_weight(entry.op, c.qweight->desc());
    if (pw.status() == Status::NotSupported) {
      r.result = Outcome::Skip;
      r.message = "prepare_weight: " + backend->last_error();
      return r;
    }
    if (!pw.ok()) {
      r.result = Outcome::Fail;
      r.message = "prepare_weight returned " + std::string(status_name(pw.status())) + " " + backend->last_error();
      return r;
    }
    prepared = std::move(pw.get());
  }
  const Status ds = call_entry(entry, dev_in, dev_out, with_weight(c.params, prepared.get()), get_num_threads());
  if (ds == Status::NotSupported) {
    r.result = Outcome::Skip;
    r.message = backend->last_error();
    return r;
  }
  if (ds != Status::Ok) {
    r.result = Outcome::Fail;
    r.message = "the kernel returned " + std::string(status_name(ds)) + " " + backend->last_error();
    return r;
  }
  const Status ss = backend->synchronize();
  if (ss != Status::Ok) {
    r.result = Outcome::Fail;
    r.message = "synchronize returned " + std::string(status_name(ss)) + " " + backend->last_error();
    return r;
  }
  // Whole output bases: elements a view does not cover must stay untouched.
  for (size_t k = 0; k < dev_out_base.size(); ++k) {
    if (!dev_out_base[k].defined()) continue;  // absent
    const Tensor got = dev_out_base[k].to(Device(DeviceType::CPU));
    double err = 0.0;
    std::string why;
    const Relaxation* relaxed = relaxation(backend, entry.op, got.dtype());
    const double bound = relaxed != nullptr      ? relaxed->bound
                         : held_exact(backend, entry.op) ? 0.0
                                                         : bound_for(got.dtype(), c.family, c.k);
    if (upcast) {
      double step_err = 0.0;
      std::string ignored;
      compare(got, stepwise_base[k], 0.0, &step_err, &ignored);
      r.stepwise_err = std::max(r.stepwise_err, step_err);
    }
    if (!compare(got, ref_out_base[k], bound, &err, &why)) {
      r.result = Outcome::Fail;
      r.message = "output " + std::to_string(k) + ": " + why;
    }
    r.max_err = std::max(r.max_err, err);
  }
  return r;
}

std::string dtypes_str(DTypeSet set) {
  std::string s;
  for (DType t : kDTypes) {
    if (set & dtype_bit(t)) s += (s.empty() ? "" : ",") + dtype_str(t);
  }
  return s;
}

uint64_t seed_for(OpKind op, DType dt) { return 0x5eed0000u + 97u * static_cast<unsigned>(op) + static_cast<unsigned>(dt); }

// Every kernel entry of `backend` (the CPU's own: not the reference fallbacks).
void run_suite(Backend* backend) {
  const bool cpu = backend->device_type() == DeviceType::CPU;
  int entries = 0, pairs = 0, cases = 0, skips = 0, failures = 0;
  std::ostringstream per_entry, relaxed;
  for (const KernelEntry& e : backend->kernels()) {
    if (cpu && is_ref_fn(e.fn)) continue;  // the reference fallbacks of the CPU table
    ++entries;
    per_entry << "  " << op_name(e.op) << " [" << dtypes_str(e.dtypes) << "]:";
    for (DType dt : kDTypes) {
      if ((e.dtypes & dtype_bit(dt)) == 0) continue;
      ++pairs;
      g_rng.seed(seed_for(e.op, dt));
      const std::vector<Case> cs = cases_for(e.op, dt);
      const std::string where = op_str(e.op) + " " + dtype_str(dt) + " on " + std::string(backend->name());
      if (cs.empty()) {
        ++failures;
        FAIL_CHECK("kernel entry without a case: " << where);
        continue;
      }
      int ran = 0, skipped = 0;
      std::string skip_reason;
      double worst = 0.0, stepwise = 0.0;
      for (const Case& c : cs) {
        const CaseResult r = run_case(e, backend, c, dt);
        ++cases;
        if (r.result == Outcome::Skip) {
          ++skipped;
          if (skip_reason.empty()) skip_reason = c.desc + ": " + r.message;
        } else if (r.result == Outcome::Fail) {
          ++failures;
          FAIL_CHECK(where << ", case " << c.desc << ": " << r.message);
        } else {
          ++ran;
        }
        worst = std::max(worst, r.max_err);
        stepwise = std::max(stepwise, r.stepwise_err);
      }
      skips += skipped;
      if (ran == 0 && skipped > 0) {
        ++failures;
        FAIL_CHECK("every case is NotSupported: " << where << " (" << skip_reason << ")");
      }
      per_entry << " " << dtype_str(dt) << " " << cs.size();
      if (skipped > 0) per_entry << " (" << skipped << " skipped)";
      if (worst > 0) per_entry << " max err " << worst;
      if (stepwise > 0) per_entry << " (float32-accumulated reference; vs the step-rounded " << dtype_str(dt) << " reference: " << stepwise << ")";
      if (const Relaxation* rx = relaxation(backend, e.op, dt)) {
        relaxed << "  relaxed bound: " << where << ": " << rx->bound << ": " << rx->why << "\n";
      }
      if (skipped > 0) std::printf("  skips: %s: first: %s\n", where.c_str(), skip_reason.c_str());
      per_entry << ";";
    }
    per_entry << "\n";
  }
  std::printf("%s%s", per_entry.str().c_str(), relaxed.str().c_str());
  std::printf("kernel suite: %s: %d kernel entries, %d (op, dtype) pairs, %d cases (%d NotSupported skips), %s\n",
              std::string(backend->name()).c_str(), entries, pairs, cases, skips,
              failures == 0 ? "all within bounds" : (std::to_string(failures) + " FAILED").c_str());
  std::fflush(stdout);
  CHECK(entries > 0);
}

}  // namespace

#if EMBER_KERNEL_SUITE_CUDA
TEST_CASE("every CUDA kernel entry (kernels/cuda/kernels.inc) against the reference kernels") {
  Backend* backend = get_backend(DeviceType::CUDA);
  REQUIRE(backend != nullptr);
  run_suite(backend);
}
#elif EMBER_KERNEL_SUITE_VULKAN
TEST_CASE("every Vulkan kernel entry against the reference kernels") {
  Backend* backend = get_backend(DeviceType::Vulkan);
  REQUIRE(backend != nullptr);
  run_suite(backend);
}
#else
TEST_CASE("every CPU kernel entry (kernels/cpu/kernels.inc) against the reference kernels") {
  Backend* backend = get_backend(DeviceType::CPU);
  REQUIRE(backend != nullptr);
  run_suite(backend);
}
#endif

// ---- gradient mode: the reference backward kernels against finite differences

namespace {

Tensor run_ref(OpKind op, const std::vector<Tensor>& in, const Shape& out_shape, const OpParams& params) {
  std::vector<Tensor> out = {zeros(out_shape, DType::Float64)};
  const KernelEntry* e = ref_kernel(op, DType::Float64);
  REQUIRE(e != nullptr);
  REQUIRE(call_entry(*e, in, out, params, 1) == Status::Ok);
  return out[0];
}

double dot_f64(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.contiguous().to_vector<double>(), y = b.contiguous().to_vector<double>();
  double s = 0.0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

}  // namespace

TEST_CASE("gradient mode: every reference backward kernel is the VJP of its forward kernel (float64)") {
  const std::pair<OpKind, OpKind> pairs[] = {
      {OpKind::MaxPool2dBackward, OpKind::MaxPool2d},
      {OpKind::AvgPool2dBackward, OpKind::AvgPool2d},
      {OpKind::AdaptiveAvgPool2dBackward, OpKind::AdaptiveAvgPool2d},
      {OpKind::EmbeddingBackward, OpKind::Embedding},
      {OpKind::PadBackward, OpKind::Pad},
  };
  int checked = 0;
  for (const auto& [bwd, fwd] : pairs) {
    g_rng.seed(seed_for(bwd, DType::Float64));
    const std::vector<Case> cs = cases_for(bwd, DType::Float64);
    REQUIRE(!cs.empty());
    for (const Case& c : cs) {
      if (c.kinked) continue;
      CAPTURE(op_str(bwd));
      CAPTURE(c.desc);
      const Tensor v = c.in[0].apply(c.in[0].base.clone());  // the cotangent, in the forward output's shape
      const Shape x_shape = c.out[0].base.sizes();
      // The forward input differentiated: max pooling's own input, else random values.
      Tensor x = bwd == OpKind::MaxPool2dBackward ? c.in[1].apply(c.in[1].base).contiguous().clone()
                                                  : values(x_shape, DType::Float64);
      Tensor indices = bwd == OpKind::EmbeddingBackward ? c.in[1].apply(c.in[1].base) : Tensor();
      auto forward = [&](const Tensor& at) {
        std::vector<Tensor> in = {at};
        if (indices.defined()) in.push_back(indices);
        return run_ref(fwd, in, v.sizes(), c.params);
      };
      std::vector<Tensor> bin = {v};
      if (bwd == OpKind::MaxPool2dBackward) bin.push_back(x);
      if (indices.defined()) bin.push_back(indices);
      const std::vector<double> analytic = run_ref(bwd, bin, x_shape, c.params).to_vector<double>();
      double* p = x.data_ptr<double>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double saved = p[i];
        p[i] = saved + kFiniteDifferenceEps;
        const double up = dot_f64(forward(x), v);
        p[i] = saved - kFiniteDifferenceEps;
        const double down = dot_f64(forward(x), v);
        p[i] = saved;
        const double numeric = (up - down) / (2 * kFiniteDifferenceEps);
        const double a = analytic[static_cast<size_t>(i)];
        if (std::fabs(a - numeric) > kFiniteDifferenceTol * (1.0 + std::fabs(numeric))) {
          FAIL_CHECK("element " << i << ": backward " << a << " vs finite differences " << numeric);
          break;
        }
      }
      ++checked;
    }
  }
  std::printf("kernel suite: gradient mode: %d backward cases checked against finite differences\n", checked);
}

#if EMBER_KERNEL_SUITE_VULKAN
TEST_CASE("the validation layer reported no error") {
  CHECK(std::getenv("EMBER_VULKAN_VALIDATION") != nullptr);
  CHECK(::ember::vk::Context::validation_errors() == 0);
}
#endif
