// Elementwise front-ends: type promotion, broadcasting, output allocation and
// in-place forms, for the unary and binary ops of ops.def.
#include <algorithm>
#include <cmath>
#include <optional>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

// --- type promotion ----------------------------------------------------------

namespace {

using MaybeType = std::optional<DType>;

MaybeType promote_maybe(MaybeType a, MaybeType b) {
  if (!a) return b;
  if (!b) return a;
  return promote_types(*a, *b);
}

// PyTorch's combine_categories: a lower-priority group only raises the
// category (bool < integral < floating), never the width within one.
MaybeType combine_categories(MaybeType higher, MaybeType lower) {
  if (higher && is_floating(*higher)) return higher;
  if (higher && (*higher == DType::Bool || (lower && is_floating(*lower)))) {
    return promote_maybe(higher, lower);
  }
  if (!higher) return lower;
  if (lower && is_floating(*lower)) return promote_maybe(higher, lower);
  return higher;
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && is_integral(to, /*include_bool=*/true)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

}  // namespace

DType result_type(Span<const Tensor> tensors, Span<const Scalar> scalars) {
  MaybeType dim_result, zero_result, wrapped_result;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (t.dim() > 0) {
      dim_result = promote_maybe(dim_result, t.dtype());
    } else {
      zero_result = promote_maybe(zero_result, t.dtype());
    }
  }
  for (const Scalar& s : scalars) wrapped_result = promote_maybe(wrapped_result, s.default_dtype());
  const MaybeType r = combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
  return r.value_or(kDefaultFloat);
}

Result<Shape> core::broadcast_shapes(IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, Status::ShapeMismatch, "The size of tensor a (", da,
                ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_shapes(IntArrayRef a, IntArrayRef b) { return unwrap(core::broadcast_shapes(a, b)); }

namespace {

// The output of an elementwise op: the layout of the first input that already
// has the output's shape (so channels_last stays channels_last), else contiguous.
Tensor new_output(IntArrayRef shape, DType dtype, std::initializer_list<Tensor> inputs) {
  for (const Tensor& t : inputs) {
    if (t.defined() && std::equal(t.sizes().begin(), t.sizes().end(), shape.begin(), shape.end())) {
      return empty_like(t, dtype);
    }
  }
  return empty(shape, TensorOptions(dtype).device(inputs.begin()->device()));
}

enum class Category { Arithmetic, TrueDivide, Compare };

DType compute_dtype(OpKind op, DType common, Category category) {
  if (category == Category::TrueDivide && is_integral(common, /*include_bool=*/true)) return kDefaultFloat;
  if (op == OpKind::Sub && common == DType::Bool) {
    raise_error(Status::InvalidArgument,
          "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
          "`logical_xor()` operator instead.");
  }
  return common;
}

GradRule grad_rule_of(OpKind op) {
  switch (op) {
    case OpKind::Add: return GradRule::Add;
    case OpKind::Sub: return GradRule::Sub;
    case OpKind::Mul: return GradRule::Mul;
    case OpKind::Div: return GradRule::Div;
    case OpKind::Pow: return GradRule::Pow;
    case OpKind::Maximum: return GradRule::Maximum;
    case OpKind::Minimum: return GradRule::Minimum;
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, ...) \
  case OpKind::Name:         \
    return GradRule::Name;
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
    default: EMBER_ASSERT(false, "no gradient rule for this binary op");
  }
  return GradRule::Add;
}

// Whether op records a backward node that reads both inputs (an RT_BINARY
// line without a grad_fn records nothing: PyTorch's op is not differentiable).
bool records(OpKind op) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, dtypes, formula, grad_fn, ...) \
  case OpKind::Name:                                         \
    return grad_fn[0] != '\0';
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
    default: return true;
  }
}
bool saves_inputs(OpKind op) {
  switch (op) {
    case OpKind::Mul: case OpKind::Div: case OpKind::Pow: case OpKind::Maximum: case OpKind::Minimum:
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, ...) case OpKind::Name:
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
      return true;
    default: return false;
  }
}

Tensor binary(OpKind op, const Tensor& a, const Tensor& b, DType common, Category category) {
  unwrap(check_same_device({a, b}));
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  const DType compute = compute_dtype(op, common, category);
  const DType out_dtype = category == Category::Compare ? DType::Bool : compute;
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor ca = a.to(compute), cb = b.to(compute);
    out = new_output(shape, out_dtype, {ca, cb});
    // No view for an operand already of the broadcast shape (most calls).
    auto broadcast = [&](const Tensor& t) { return t.sizes() == shape ? t : t.expand(shape); };
    unwrap(run_kernel(op, {broadcast(ca), broadcast(cb)}, {out}));
  }
  if (category != Category::Compare && records(op)) {
    if (Node* n = autograd::record(grad_rule_of(op), out, {a, b})) {
      if (saves_inputs(op)) n->save(a).save(b);
    }
  }
  return out;
}

Category category_of(OpKind op) {
  switch (op) {
    case OpKind::Div: return Category::TrueDivide;
    case OpKind::Eq: case OpKind::Ne: case OpKind::Lt:
    case OpKind::Le: case OpKind::Gt: case OpKind::Ge: return Category::Compare;
    default: return Category::Arithmetic;
  }
}

Tensor binary(OpKind op, const Tensor& a, const Tensor& b) {
  return binary(op, a, b, result_type({a, b}), category_of(op));
}

Tensor binary(OpKind op, const Tensor& a, Scalar b) {
  const DType common = result_type({a}, {b});
  return binary(op, a, scalar_tensor(b, TensorOptions(common).device(a.device())), common, category_of(op));
}

Tensor binary(OpKind op, Scalar a, const Tensor& b) {
  const DType common = result_type({b}, {a});
  return binary(op, scalar_tensor(a, TensorOptions(common).device(b.device())), b, common, category_of(op));
}

// `out` with its fresh node shown under PyTorch's name for this overload.
Tensor renamed(Tensor out, GradRule alias) {
  autograd::rename_grad_fn(out, alias);
  return out;
}

// self = result (computed out of place from self), in place: the result's
// node keeps copies of what it saved of self and becomes self's history.
Tensor& assign_inplace(Tensor& self, const Tensor& result) {
  autograd::unshare_saved(result, self);
  {
    NoGradGuard no_grad;
    unwrap(copy_into(self, result));
  }
  self.storage()->bump_version();
  autograd::rebase_history(self, result);
  return self;
}

// self = op(self, other), with PyTorch's rules: the result must broadcast to
// self's shape and be castable to self's dtype.
Tensor& binary_(OpKind op, Tensor& self, const Tensor& other, DType common) {
  unwrap(check_writable(self));
  const DType compute = compute_dtype(op, common, category_of(op));
  EMBER_ENFORCE(can_cast(compute, self.dtype()), Status::DTypeMismatch, "result type ", dtype_legacy_name(compute),
              " can't be cast to the desired output type ", dtype_legacy_name(self.dtype()));
  const Shape shape = broadcast_shapes(self.sizes(), other.sizes());
  EMBER_ENFORCE(shape == self.sizes(), Status::ShapeMismatch, "output with shape ", shape_str(self.sizes()),
              " doesn't match the broadcast shape ", shape_str(shape));
  autograd::check_inplace(self);
  if (autograd::needs_grad({self, other})) {
    // Computed out of place (the node reads the old value), then written back.
    return assign_inplace(self, binary(op, self, other, common, category_of(op)));
  } else if (compute == self.dtype()) {
    unwrap(check_same_device({self, other}));
    Tensor o = other.to(compute);
    if (o.storage() == self.storage() && !o.is_same(self)) o = o.clone();  // overlapping operand
    unwrap(run_kernel(op, {self, o.expand(shape)}, {self}));
  } else {
    unwrap(copy_into(self, binary(op, self, other, common, category_of(op))));
  }
  self.storage()->bump_version();
  return self;
}

Tensor& binary_(OpKind op, Tensor& self, const Tensor& other) {
  return binary_(op, self, other, result_type({self, other}));
}

Tensor& binary_(OpKind op, Tensor& self, Scalar other) {
  const DType common = result_type({self}, {other});
  return binary_(op, self, scalar_tensor(other, TensorOptions(common).device(self.device())), common);
}

// A unary op: run its kernel, record its backward rule (saving the input, or
// the output where the rule reads that). `to_float`: integer and bool inputs
// become float32 first.
Tensor unary(OpKind op, GradRule rule, bool save_output, const Tensor& x, const OpParams& params,
             bool to_float) {
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor in = to_float && !x.is_floating_point() ? x.to(kDefaultFloat) : x;
    out = empty_like(in);
    unwrap(run_kernel(op, {in}, {out}, params));
  }
  if (Node* n = autograd::record(rule, out, {x})) {
    n->save(save_output ? out : x);
    n->params = params;
    if (const auto* g = std::get_if<GeluParams>(&params)) n->ints = {g->tanh_approximation ? 1 : 0};
    if (const auto* c = std::get_if<ClampParams>(&params)) {
      n->ints = {c->has_min, c->has_max};
      n->reals = {c->min.to_double(), c->max.to_double()};
    }
    if (const auto* u = std::get_if<UnaryParams>(&params)) n->reals = {u->a, u->b};
  }
  return out;
}

// The autocast of an RT_UNARY op (runtime/amp/autocast_ops.def), if it has a line.
amp::Cast autocast_unary(OpKind op, const Tensor& x) {
  if (amp::detail::active_mask == 0) return amp::Cast();
  const std::optional<amp::Op> amp_op = amp::unary_autocast_op(op);
  if (!amp_op) return amp::Cast();
  return amp::autocast(*amp_op, {x});
}

// An RT_UNARY op of ops.def: its rule and saved tensor come from its line.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, formula, onnx, grad_fn, saved, backward) \
  Tensor name##_impl(const Tensor& x, bool to_float) {                                  \
    if (amp::Cast c = autocast_unary(OpKind::Name, x)) return name##_impl(c[0], to_float);  \
    return unary(OpKind::Name, GradRule::Name, #saved[0] == 'y', x, NoParams{}, to_float); \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP

// `x`, or PyTorch's error for a non-float input of kernel `kernel`.
const Tensor& floating(const Tensor& x, const char* kernel) {
  EMBER_ENFORCE(x.is_floating_point(), Status::NotSupported, "\"", kernel, "_cpu\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  return x;
}

// The generated front-ends, by the line's input policy (Custom ones are below).
#define RT_UNARY_FRONT_END_Promote(name) \
  Tensor name(const Tensor& x) { return name##_impl(x, /*to_float=*/true); }
#define RT_UNARY_FRONT_END_Float(name) \
  Tensor name(const Tensor& x) { return name##_impl(floating(x, #name), /*to_float=*/false); }
#define RT_UNARY_FRONT_END_Custom(name)

}  // namespace

#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, ...) RT_UNARY_FRONT_END_##inputs(name)
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP

Tensor unary_op(OpKind op, const Tensor& x) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    break;
#define RT_UNARY(Name, name, ...) \
  case OpKind::Name:              \
    return name(x);
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP
  }
  raise_error(Status::NotSupported, str_cat("\"", op_name(op), "\" is not a unary elementwise op"));
}

// An RT_UNARY_P op of ops.def: as RT_UNARY's, with its UnaryParams.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...)
#define RT_UNARY_P(Name, name, dtypes, formula, onnx, attr_a, default_a, attr_b, default_b, grad_fn, saved, backward) \
  Tensor name##_p(const Tensor& x, double a, double b) {                                                        \
    return unary(OpKind::Name, GradRule::Name, #saved[0] == 'y', floating(x, #name), UnaryParams{a, b}, false); \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

Tensor unary_op(OpKind op, const Tensor& x, double a, double b) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    break;
#define RT_UNARY(Name, ...) RT_OP(Name, , , , )
#define RT_UNARY_P(Name, name, ...) \
  case OpKind::Name:                \
    return name##_p(x, a, b);
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
  }
  raise_error(Status::NotSupported, str_cat("\"", op_name(op), "\" is not a parameterized unary op"));
}

// PyTorch's front-ends on them (its kernel names in the dtype message: selu and
// celu run elu's).
Tensor hardsigmoid(const Tensor& x) { return hardsigmoid_p(floating(x, "hardsigmoid"), 1.0 / 6, 0.5); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return leaky_relu_p(floating(x, "leaky_relu"), negative_slope, 0);
}
Tensor elu(const Tensor& x, double alpha) { return elu_p(floating(x, "elu"), alpha, 0); }
Tensor selu(const Tensor& x) {
  return selu_p(floating(x, "elu"), 1.6732632423543772848170429916717, 1.0507009873554804934193349852946);
}
Tensor celu(const Tensor& x, double alpha) { return celu_p(floating(x, "elu"), alpha, 0); }
Tensor thresholded_relu(const Tensor& x, double alpha) {
  return thresholded_relu_p(floating(x, "thresholded_relu"), alpha, 0);
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(OpKind::Add, a, b); }
Tensor add(const Tensor& a, Scalar b) { return binary(OpKind::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(OpKind::Sub, a, b); }
Tensor sub(const Tensor& a, Scalar b) { return binary(OpKind::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(OpKind::Mul, a, b); }
Tensor mul(const Tensor& a, Scalar b) { return binary(OpKind::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(OpKind::Div, a, b); }
Tensor div(const Tensor& a, Scalar b) { return binary(OpKind::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) {
  if (amp::Cast c = amp::autocast(amp::Op::Pow, {a, b})) return pow(c[0], c[1]);
  return binary(OpKind::Pow, a, b);
}
Tensor pow(const Tensor& a, Scalar b) {
  if (amp::Cast c = amp::autocast(amp::Op::Pow, {a})) return pow(c[0], b);
  EMBER_ENFORCE(!(is_integral(a.dtype()) && b.is_integral() && b.to_int() < 0), Status::InvalidArgument,
              "Integers to negative integer powers are not allowed.");
  return renamed(binary(OpKind::Pow, a, b), GradRule::PowScalar);
}
Tensor pow(Scalar a, const Tensor& b) {
  if (amp::Cast c = amp::autocast(amp::Op::Pow, {b})) return pow(a, c[0]);
  return renamed(binary(OpKind::Pow, a, b), GradRule::PowScalarBase);
}
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(OpKind::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(OpKind::Minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(OpKind::Eq, a, b); }
Tensor eq(const Tensor& a, Scalar b) { return binary(OpKind::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(OpKind::Ne, a, b); }
Tensor ne(const Tensor& a, Scalar b) { return binary(OpKind::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(OpKind::Lt, a, b); }
Tensor lt(const Tensor& a, Scalar b) { return binary(OpKind::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(OpKind::Le, a, b); }
Tensor le(const Tensor& a, Scalar b) { return binary(OpKind::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(OpKind::Gt, a, b); }
Tensor gt(const Tensor& a, Scalar b) { return binary(OpKind::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(OpKind::Ge, a, b); }
Tensor ge(const Tensor& a, Scalar b) { return binary(OpKind::Ge, a, b); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
Tensor operator+(Scalar a, const Tensor& b) { return binary(OpKind::Add, a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
Tensor operator-(Scalar a, const Tensor& b) { return renamed(binary(OpKind::Sub, a, b), GradRule::Rsub); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
Tensor operator*(Scalar a, const Tensor& b) { return binary(OpKind::Mul, a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
Tensor operator/(Scalar a, const Tensor& b) { return binary(OpKind::Div, a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, Scalar b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, Scalar b) { return ne(a, b); }
Tensor operator<(const Tensor& a, Scalar b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, Scalar b) { return le(a, b); }
Tensor operator>(const Tensor& a, Scalar b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, Scalar b) { return ge(a, b); }

Tensor& Tensor::add_(const Tensor& other) {
  unwrap(check_defined(*this, "add_", "self"));
  unwrap(check_defined(other, "add_", "other"));
  return binary_(OpKind::Add, *this, other);
}
Tensor& Tensor::add_(Scalar other) {
  unwrap(check_defined(*this, "add_", "self"));
  return binary_(OpKind::Add, *this, other);
}
Tensor& Tensor::sub_(const Tensor& other) {
  unwrap(check_defined(*this, "sub_", "self"));
  unwrap(check_defined(other, "sub_", "other"));
  return binary_(OpKind::Sub, *this, other);
}
Tensor& Tensor::sub_(Scalar other) {
  unwrap(check_defined(*this, "sub_", "self"));
  return binary_(OpKind::Sub, *this, other);
}
Tensor& Tensor::mul_(const Tensor& other) {
  unwrap(check_defined(*this, "mul_", "self"));
  unwrap(check_defined(other, "mul_", "other"));
  return binary_(OpKind::Mul, *this, other);
}
Tensor& Tensor::mul_(Scalar other) {
  unwrap(check_defined(*this, "mul_", "self"));
  return binary_(OpKind::Mul, *this, other);
}
Tensor& Tensor::div_(const Tensor& other) {
  unwrap(check_defined(*this, "div_", "self"));
  unwrap(check_defined(other, "div_", "other"));
  return binary_(OpKind::Div, *this, other);
}
Tensor& Tensor::div_(Scalar other) {
  unwrap(check_defined(*this, "div_", "self"));
  return binary_(OpKind::Div, *this, other);
}

// The RT_BINARY ops' front-ends.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, ...)                                                         \
  Tensor name(const Tensor& a, const Tensor& b) { return binary(OpKind::Name, a, b); } \
  Tensor name(const Tensor& a, Scalar b) { return binary(OpKind::Name, a, b); }
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP

Tensor binary_op(OpKind op, const Tensor& a, const Tensor& b) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, ...) \
  case OpKind::Name:               \
    return name(a, b);
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
    default: break;
  }
  raise_error(Status::NotSupported, str_cat("\"", op_name(op), "\" is not a binary elementwise op"));
}

namespace {
OpKind rounding_op(std::string_view rounding_mode) {
  EMBER_ENFORCE(rounding_mode == "trunc" || rounding_mode == "floor", Status::InvalidArgument,
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", rounding_mode, "'");
  return rounding_mode == "trunc" ? OpKind::TruncDivide : OpKind::FloorDivide;
}
}  // namespace

Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  return binary(rounding_op(rounding_mode), a, b);
}
Tensor div(const Tensor& a, Scalar b, std::string_view rounding_mode) {
  return binary(rounding_op(rounding_mode), a, b);
}

// bitwise_not: x ^ all ones (true for bool).
Tensor bitwise_not(const Tensor& x) {
  EMBER_ENFORCE(is_integral(x.dtype(), /*include_bool=*/true), Status::NotSupported,
              "\"bitwise_not_cpu\" not implemented for '", dtype_legacy_name(x.dtype()), "'");
  return bitwise_xor(x, x.dtype() == DType::Bool ? Scalar(true) : Scalar(-1));
}

// As PyTorch composes them: x != x; |x| == inf; x == +-inf; x == x and |x| != inf.
Tensor isnan(const Tensor& x) { return ne(x, x); }
Tensor isinf(const Tensor& x) {
  return x.is_floating_point() ? eq(abs(x), INFINITY) : zeros_like(x, TensorOptions(DType::Bool));
}
Tensor isposinf(const Tensor& x) {
  return x.is_floating_point() ? eq(x, INFINITY) : zeros_like(x, TensorOptions(DType::Bool));
}
Tensor isneginf(const Tensor& x) {
  return x.is_floating_point() ? eq(x, -INFINITY) : zeros_like(x, TensorOptions(DType::Bool));
}
Tensor isfinite(const Tensor& x) {
  if (!x.is_floating_point()) return ones_like(x, TensorOptions(DType::Bool));
  return mul(eq(x, x), ne(abs(x), INFINITY));
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  EMBER_ENFORCE(condition.dtype() == DType::Bool, Status::DTypeMismatch,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_legacy_name(condition.dtype()));
  unwrap(check_same_device({condition, a, b}));
  const Shape shape = broadcast_shapes(broadcast_shapes(condition.sizes(), a.sizes()), b.sizes());
  const DType dtype = result_type({a, b});
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor ca = a.to(dtype), cb = b.to(dtype);
    out = new_output(shape, dtype, {ca, cb, condition});
    unwrap(run_kernel(OpKind::Where, {ca.expand(shape), cb.expand(shape), condition.expand(shape)}, {out}));
  }
  if (Node* n = autograd::record(GradRule::Where, out, {a, b})) n->save(condition);
  return out;
}

Tensor where(const Tensor& condition, Scalar a, const Tensor& b) {
  return where(condition, scalar_tensor(a, TensorOptions(result_type({b}, {a})).device(b.device())), b);
}

Tensor where(const Tensor& condition, const Tensor& a, Scalar b) {
  return where(condition, a, scalar_tensor(b, TensorOptions(result_type({a}, {b})).device(a.device())));
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  EMBER_ENFORCE(min || max, Status::InvalidArgument,
              "torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Scalar> bounds;
  if (min) bounds.push_back(*min);
  if (max) bounds.push_back(*max);
  const DType dtype = result_type({x}, bounds);
  EMBER_ENFORCE(dtype != DType::Bool, Status::NotSupported, "\"clamp\" not implemented for 'Bool'");
  ClampParams p;
  p.has_min = min.has_value();
  p.has_max = max.has_value();
  if (min) p.min = *min;
  if (max) p.max = *max;
  return unary(OpKind::Clamp, GradRule::Clamp, /*save_output=*/false, x.to(dtype), p, /*to_float=*/false);
}

Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  unwrap(check_defined(*this, "clamp_", "self"));
  autograd::check_inplace(*this);
  unwrap(check_writable(*this));
  return assign_inplace(*this, clamp(*this, min, max));
}

Tensor neg(const Tensor& x) {
  EMBER_ENFORCE(x.dtype() != DType::Bool, Status::InvalidArgument,
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
              "invert a mask, use the `~` or `logical_not()` operator instead.");
  return neg_impl(x, /*to_float=*/false);
}
Tensor abs(const Tensor& x) {
  EMBER_ENFORCE(x.dtype() != DType::Bool, Status::NotSupported, "\"abs_cpu\" not implemented for 'Bool'");
  return abs_impl(x, /*to_float=*/false);
}
Tensor relu(const Tensor& x) {
  EMBER_ENFORCE(x.dtype() != DType::Bool, Status::NotSupported, "Boolean inputs not supported for relu");
  return relu_impl(x, /*to_float=*/false);
}
// floor, ceil, round: integers are returned as they are (in their dtype), bool is refused.
Tensor floor(const Tensor& x) {
  EMBER_ENFORCE(x.dtype() != DType::Bool, Status::NotSupported, "\"floor_vml_cpu\" not implemented for 'Bool'");
  return floor_impl(x, /*to_float=*/false);
}
Tensor ceil(const Tensor& x) {
  EMBER_ENFORCE(x.dtype() != DType::Bool, Status::NotSupported, "\"ceil_vml_cpu\" not implemented for 'Bool'");
  return ceil_impl(x, /*to_float=*/false);
}
Tensor round(const Tensor& x) {
  EMBER_ENFORCE(x.dtype() != DType::Bool, Status::NotSupported, "\"round_vml_cpu\" not implemented for 'Bool'");
  return round_impl(x, /*to_float=*/false);
}
Tensor sign(const Tensor& x) { return sign_impl(x, /*to_float=*/false); }  // every dtype, kept
// softsign: PyTorch's x / (1 + abs(x)): abs refuses bool, the division makes integers float32.
Tensor softsign(const Tensor& x) {
  EMBER_ENFORCE(x.dtype() != DType::Bool, Status::NotSupported, "\"abs_cpu\" not implemented for 'Bool'");
  return softsign_impl(x, /*to_float=*/true);
}
Tensor gelu(const Tensor& x, std::string_view approximate) {
  EMBER_ENFORCE(approximate == "none" || approximate == "tanh", Status::InvalidArgument,
              "approximate argument must be either none or tanh.");
  EMBER_ENFORCE(x.is_floating_point(), Status::NotSupported, "\"GeluKernelImpl\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  return unary(OpKind::Gelu, GradRule::Gelu, /*save_output=*/false, x, GeluParams{approximate == "tanh"},
               /*to_float=*/false);
}

Tensor& Tensor::relu_() {
  unwrap(check_defined(*this, "relu_", "self"));
  autograd::check_inplace(*this);
  unwrap(check_writable(*this));
  return assign_inplace(*this, relu(*this));
}

Tensor Tensor::abs() const { return ember::abs(*this); }
Tensor Tensor::neg() const { return ember::neg(*this); }
Tensor Tensor::exp() const { return ember::exp(*this); }
Tensor Tensor::log() const { return ember::log(*this); }
Tensor Tensor::sqrt() const { return ember::sqrt(*this); }
Tensor Tensor::pow(const Tensor& exponent) const { return ember::pow(*this, exponent); }
Tensor Tensor::pow(Scalar exponent) const { return ember::pow(*this, exponent); }

}  // namespace ember
