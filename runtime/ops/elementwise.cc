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

Result<MaybeType> promote_maybe(MaybeType a, MaybeType b) {
  if (!a) return b;
  if (!b) return a;
  EMBER_ASSIGN_OR_RETURN(const DType t, core::promote_types(*a, *b));
  return MaybeType(t);
}

// PyTorch's combine_categories: a lower-priority group only raises the
// category (bool < integral < floating), never the width within one.
Result<MaybeType> combine_categories(MaybeType higher, MaybeType lower) {
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

// torch.result_type: promote_types' refusals (storage-only, uint16/32/64 with integers) fail.
Result<DType> core::result_type(Span<const Tensor> tensors, Span<const Scalar> scalars) {
  MaybeType dim_result, zero_result, wrapped_result;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (t.dim() > 0) {
      EMBER_ASSIGN_OR_RETURN(dim_result, promote_maybe(dim_result, t.dtype()));
    } else {
      EMBER_ASSIGN_OR_RETURN(zero_result, promote_maybe(zero_result, t.dtype()));
    }
  }
  for (const Scalar& s : scalars) {
    EMBER_ASSIGN_OR_RETURN(wrapped_result, promote_maybe(wrapped_result, s.default_dtype()));
  }
  EMBER_ASSIGN_OR_RETURN(const MaybeType lower, combine_categories(zero_result, wrapped_result));
  EMBER_ASSIGN_OR_RETURN(const MaybeType r, combine_categories(dim_result, lower));
  return r.value_or(kDefaultFloat);
}

DType result_type(Span<const Tensor> tensors, Span<const Scalar> scalars) {
  return unwrap(core::result_type(tensors, scalars));
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
Result<Tensor> new_output(IntArrayRef shape, DType dtype, std::initializer_list<Tensor> inputs) {
  for (const Tensor& t : inputs) {
    if (t.defined() && std::equal(t.sizes().begin(), t.sizes().end(), shape.begin(), shape.end())) {
      return core::empty_like(t, dtype);
    }
  }
  return core::empty(shape, TensorOptions(dtype).device(inputs.begin()->device()));
}

// scalar_tensor(value, dtype on device), through the cores.
Result<Tensor> scalar_of(Scalar value, DType dtype, Device device) {
  return core::full({}, value, TensorOptions(dtype).device(device));
}

enum class Category { Arithmetic, TrueDivide, Compare };

Result<DType> compute_dtype(OpKind op, DType common, Category category) {
  if (category == Category::TrueDivide && is_integral(common, /*include_bool=*/true)) return kDefaultFloat;
  EMBER_CHECK(!(op == OpKind::Sub && common == DType::Bool), Status::InvalidArgument,
              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.");
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

Result<Tensor> binary(OpKind op, const Tensor& a, const Tensor& b, DType common, Category category) {
  EMBER_TRY(check_same_device({a, b}));
  EMBER_ASSIGN_OR_RETURN(const Shape shape, core::broadcast_shapes(a.sizes(), b.sizes()));
  EMBER_ASSIGN_OR_RETURN(const DType compute, compute_dtype(op, common, category));
  const DType out_dtype = category == Category::Compare ? DType::Bool : compute;
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(const Tensor ca, core::to(a, compute));
    EMBER_ASSIGN_OR_RETURN(const Tensor cb, core::to(b, compute));
    EMBER_ASSIGN_OR_RETURN(out, new_output(shape, out_dtype, {ca, cb}));
    // No view for an operand already of the broadcast shape (most calls).
    auto broadcast = [&](const Tensor& t) -> Result<Tensor> {
      if (t.sizes() == shape) return t;
      return core::expand(t, shape);
    };
    EMBER_ASSIGN_OR_RETURN(const Tensor ea, broadcast(ca));
    EMBER_ASSIGN_OR_RETURN(const Tensor eb, broadcast(cb));
    EMBER_TRY(run_kernel(op, {ea, eb}, {out}));
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

Result<Tensor> binary(OpKind op, const Tensor& a, const Tensor& b) {
  EMBER_ASSIGN_OR_RETURN(const DType common, core::result_type({a, b}));
  return binary(op, a, b, common, category_of(op));
}

Result<Tensor> binary(OpKind op, const Tensor& a, Scalar b) {
  EMBER_ASSIGN_OR_RETURN(const DType common, core::result_type({a}, {b}));
  EMBER_ASSIGN_OR_RETURN(const Tensor bt, scalar_of(b, common, a.device()));
  return binary(op, a, bt, common, category_of(op));
}

Result<Tensor> binary(OpKind op, Scalar a, const Tensor& b) {
  EMBER_ASSIGN_OR_RETURN(const DType common, core::result_type({b}, {a}));
  EMBER_ASSIGN_OR_RETURN(const Tensor at, scalar_of(a, common, b.device()));
  return binary(op, at, b, common, category_of(op));
}

// `result` with its fresh node shown under PyTorch's name for this overload.
Result<Tensor> renamed(Result<Tensor> result, GradRule alias) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, std::move(result));
  autograd::rename_grad_fn(out, alias);
  return out;
}

// self = result (computed out of place from self), in place: the result's
// node keeps copies of what it saved of self and becomes self's history.
Status assign_inplace(Tensor& self, const Tensor& result) {
  autograd::unshare_saved(result, self);
  {
    NoGradGuard no_grad;
    EMBER_TRY(copy_into(self, result));
  }
  self.storage()->bump_version();
  autograd::rebase_history(self, result);
  return Status::Ok;
}

// self = op(self, other), with PyTorch's rules: the result must broadcast to
// self's shape and be castable to self's dtype.
Status binary_(OpKind op, Tensor& self, const Tensor& other, DType common) {
  EMBER_TRY(check_writable(self));
  EMBER_ASSIGN_OR_RETURN(const DType compute, compute_dtype(op, common, category_of(op)));
  EMBER_CHECK(can_cast(compute, self.dtype()), Status::DTypeMismatch, "result type ", dtype_legacy_name(compute),
              " can't be cast to the desired output type ", dtype_legacy_name(self.dtype()));
  EMBER_ASSIGN_OR_RETURN(const Shape shape, core::broadcast_shapes(self.sizes(), other.sizes()));
  EMBER_CHECK(shape == self.sizes(), Status::ShapeMismatch, "output with shape ", shape_str(self.sizes()),
              " doesn't match the broadcast shape ", shape_str(shape));
  autograd::check_inplace(self);
  if (autograd::needs_grad({self, other})) {
    // Computed out of place (the node reads the old value), then written back.
    EMBER_ASSIGN_OR_RETURN(const Tensor result, binary(op, self, other, common, category_of(op)));
    return assign_inplace(self, result);
  } else if (compute == self.dtype()) {
    EMBER_TRY(check_same_device({self, other}));
    EMBER_ASSIGN_OR_RETURN(Tensor o, core::to(other, compute));
    if (o.storage() == self.storage() && !o.is_same(self)) {  // overlapping operand
      EMBER_ASSIGN_OR_RETURN(o, core::clone(o));
    }
    EMBER_ASSIGN_OR_RETURN(const Tensor expanded, core::expand(o, shape));
    EMBER_TRY(run_kernel(op, {self, expanded}, {self}));
  } else {
    EMBER_ASSIGN_OR_RETURN(const Tensor result, binary(op, self, other, common, category_of(op)));
    EMBER_TRY(copy_into(self, result));
  }
  self.storage()->bump_version();
  return Status::Ok;
}

Status binary_(OpKind op, Tensor& self, const Tensor& other) {
  EMBER_ASSIGN_OR_RETURN(const DType common, core::result_type({self, other}));
  return binary_(op, self, other, common);
}

Status binary_(OpKind op, Tensor& self, Scalar other) {
  EMBER_ASSIGN_OR_RETURN(const DType common, core::result_type({self}, {other}));
  EMBER_ASSIGN_OR_RETURN(const Tensor o, scalar_of(other, common, self.device()));
  return binary_(op, self, o, common);
}

// A unary op: run its kernel, record its backward rule (saving the input, or
// the output where the rule reads that). `to_float`: integer and bool inputs
// become float32 first.
Result<Tensor> unary(OpKind op, GradRule rule, bool save_output, const Tensor& x, const OpParams& params,
                     bool to_float) {
  Tensor out;
  {
    NoGradGuard no_grad;
    Tensor in = x;
    if (to_float && !x.is_floating_point()) {
      EMBER_ASSIGN_OR_RETURN(in, core::to(x, kDefaultFloat));
    }
    EMBER_ASSIGN_OR_RETURN(out, core::empty_like(in));
    EMBER_TRY(run_kernel(op, {in}, {out}, params));
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
#define RT_UNARY(Name, name, dtypes, inputs, formula, onnx, grad_fn, saved, backward)     \
  Result<Tensor> name##_impl(const Tensor& x, bool to_float) {                             \
    if (amp::Cast c = autocast_unary(OpKind::Name, x)) return name##_impl(c[0], to_float); \
    return unary(OpKind::Name, GradRule::Name, #saved[0] == 'y', x, NoParams{}, to_float); \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP

// PyTorch's error for a non-float input of kernel `kernel`.
Status check_floating(const Tensor& x, const char* kernel) {
  EMBER_CHECK(x.is_floating_point(), Status::NotSupported, "\"", kernel, "_cpu\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  return Status::Ok;
}

// The generated cores, by the line's input policy (Custom ones are below).
#define RT_UNARY_CORE_Promote(name) \
  Result<Tensor> core::name(const Tensor& x) { return name##_impl(x, /*to_float=*/true); }
#define RT_UNARY_CORE_Float(name)              \
  Result<Tensor> core::name(const Tensor& x) { \
    EMBER_TRY(check_floating(x, #name));       \
    return name##_impl(x, /*to_float=*/false); \
  }
#define RT_UNARY_CORE_Custom(name)

}  // namespace

// The RT_UNARY ops' cores and front-ends.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, ...) \
  RT_UNARY_CORE_##inputs(name)                    \
  Tensor name(const Tensor& x) { return unwrap(core::name(x)); }
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP

Result<Tensor> core::unary_op(OpKind op, const Tensor& x) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    break;
#define RT_UNARY(Name, name, ...) \
  case OpKind::Name:              \
    return core::name(x);
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP
  }
  return fail(Status::NotSupported, "\"", op_name(op), "\" is not a unary elementwise op");
}

Tensor unary_op(OpKind op, const Tensor& x) { return unwrap(core::unary_op(op, x)); }

// An RT_UNARY_P op of ops.def: as RT_UNARY's, with its UnaryParams.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...)
#define RT_UNARY_P(Name, name, dtypes, formula, onnx, attr_a, default_a, attr_b, default_b, grad_fn, saved, backward) \
  Result<Tensor> core::name##_p(const Tensor& x, double a, double b) {                                          \
    EMBER_TRY(check_floating(x, #name));                                                                        \
    return unary(OpKind::Name, GradRule::Name, #saved[0] == 'y', x, UnaryParams{a, b}, false);                 \
  }                                                                                                             \
  Tensor name##_p(const Tensor& x, double a, double b) { return unwrap(core::name##_p(x, a, b)); }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

Result<Tensor> core::unary_op(OpKind op, const Tensor& x, double a, double b) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    break;
#define RT_UNARY(Name, ...) RT_OP(Name, , , , )
#define RT_UNARY_P(Name, name, ...) \
  case OpKind::Name:                \
    return core::name##_p(x, a, b);
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
  }
  return fail(Status::NotSupported, "\"", op_name(op), "\" is not a parameterized unary op");
}

Tensor unary_op(OpKind op, const Tensor& x, double a, double b) { return unwrap(core::unary_op(op, x, a, b)); }

// PyTorch's front-ends on them (its kernel names in the dtype message: selu and
// celu run elu's).
Result<Tensor> core::hardsigmoid(const Tensor& x) {
  EMBER_TRY(check_floating(x, "hardsigmoid"));
  return core::hardsigmoid_p(x, 1.0 / 6, 0.5);
}
Result<Tensor> core::leaky_relu(const Tensor& x, double negative_slope) {
  EMBER_TRY(check_floating(x, "leaky_relu"));
  return core::leaky_relu_p(x, negative_slope, 0);
}
Result<Tensor> core::elu(const Tensor& x, double alpha) {
  EMBER_TRY(check_floating(x, "elu"));
  return core::elu_p(x, alpha, 0);
}
Result<Tensor> core::selu(const Tensor& x) {
  EMBER_TRY(check_floating(x, "elu"));
  return core::selu_p(x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946);
}
Result<Tensor> core::celu(const Tensor& x, double alpha) {
  EMBER_TRY(check_floating(x, "elu"));
  return core::celu_p(x, alpha, 0);
}
Result<Tensor> core::thresholded_relu(const Tensor& x, double alpha) {
  EMBER_TRY(check_floating(x, "thresholded_relu"));
  return core::thresholded_relu_p(x, alpha, 0);
}
Tensor hardsigmoid(const Tensor& x) { return unwrap(core::hardsigmoid(x)); }
Tensor leaky_relu(const Tensor& x, double negative_slope) { return unwrap(core::leaky_relu(x, negative_slope)); }
Tensor elu(const Tensor& x, double alpha) { return unwrap(core::elu(x, alpha)); }
Tensor selu(const Tensor& x) { return unwrap(core::selu(x)); }
Tensor celu(const Tensor& x, double alpha) { return unwrap(core::celu(x, alpha)); }
Tensor thresholded_relu(const Tensor& x, double alpha) { return unwrap(core::thresholded_relu(x, alpha)); }

// core::name(a, b) over binary(OpKind::Name, a, b), b of type B, and its front-end.
#define EMBER_BINARY_CORE(Name, name, B)                                                   \
  Result<Tensor> core::name(const Tensor& a, B b) { return binary(OpKind::Name, a, b); } \
  Tensor name(const Tensor& a, B b) { return unwrap(core::name(a, b)); }
#define EMBER_BINARY_CORES(Name, name)           \
  EMBER_BINARY_CORE(Name, name, const Tensor&) \
  EMBER_BINARY_CORE(Name, name, Scalar)

EMBER_BINARY_CORES(Add, add)
EMBER_BINARY_CORES(Sub, sub)
EMBER_BINARY_CORES(Mul, mul)
EMBER_BINARY_CORES(Div, div)
Result<Tensor> core::pow(const Tensor& a, const Tensor& b) {
  if (amp::Cast c = amp::autocast(amp::Op::Pow, {a, b})) return core::pow(c[0], c[1]);
  return binary(OpKind::Pow, a, b);
}
Result<Tensor> core::pow(const Tensor& a, Scalar b) {
  if (amp::Cast c = amp::autocast(amp::Op::Pow, {a})) return core::pow(c[0], b);
  EMBER_CHECK(!(is_integral(a.dtype()) && b.is_integral() && b.to_int() < 0), Status::InvalidArgument,
              "Integers to negative integer powers are not allowed.");
  return renamed(binary(OpKind::Pow, a, b), GradRule::PowScalar);
}
Result<Tensor> core::pow(Scalar a, const Tensor& b) {
  if (amp::Cast c = amp::autocast(amp::Op::Pow, {b})) return core::pow(a, c[0]);
  return renamed(binary(OpKind::Pow, a, b), GradRule::PowScalarBase);
}
Tensor pow(const Tensor& a, const Tensor& b) { return unwrap(core::pow(a, b)); }
Tensor pow(const Tensor& a, Scalar b) { return unwrap(core::pow(a, b)); }
Tensor pow(Scalar a, const Tensor& b) { return unwrap(core::pow(a, b)); }
EMBER_BINARY_CORE(Maximum, maximum, const Tensor&)
EMBER_BINARY_CORE(Minimum, minimum, const Tensor&)
EMBER_BINARY_CORES(Eq, eq)
EMBER_BINARY_CORES(Ne, ne)
EMBER_BINARY_CORES(Lt, lt)
EMBER_BINARY_CORES(Le, le)
EMBER_BINARY_CORES(Gt, gt)
EMBER_BINARY_CORES(Ge, ge)

Tensor operator+(const Tensor& a, const Tensor& b) { return unwrap(core::add(a, b)); }
Tensor operator+(const Tensor& a, Scalar b) { return unwrap(core::add(a, b)); }
Tensor operator+(Scalar a, const Tensor& b) { return unwrap(binary(OpKind::Add, a, b)); }
Tensor operator-(const Tensor& a, const Tensor& b) { return unwrap(core::sub(a, b)); }
Tensor operator-(const Tensor& a, Scalar b) { return unwrap(core::sub(a, b)); }
Result<Tensor> core::rsub(const Tensor& b, Scalar a) { return renamed(binary(OpKind::Sub, a, b), GradRule::Rsub); }
Tensor operator-(Scalar a, const Tensor& b) { return unwrap(core::rsub(b, a)); }
Tensor operator*(const Tensor& a, const Tensor& b) { return unwrap(core::mul(a, b)); }
Tensor operator*(const Tensor& a, Scalar b) { return unwrap(core::mul(a, b)); }
Tensor operator*(Scalar a, const Tensor& b) { return unwrap(binary(OpKind::Mul, a, b)); }
Tensor operator/(const Tensor& a, const Tensor& b) { return unwrap(core::div(a, b)); }
Tensor operator/(const Tensor& a, Scalar b) { return unwrap(core::div(a, b)); }
Tensor operator/(Scalar a, const Tensor& b) { return unwrap(binary(OpKind::Div, a, b)); }
Tensor operator-(const Tensor& a) { return unwrap(core::neg(a)); }
Tensor operator==(const Tensor& a, const Tensor& b) { return unwrap(core::eq(a, b)); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return unwrap(core::ne(a, b)); }
Tensor operator<(const Tensor& a, const Tensor& b) { return unwrap(core::lt(a, b)); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return unwrap(core::le(a, b)); }
Tensor operator>(const Tensor& a, const Tensor& b) { return unwrap(core::gt(a, b)); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return unwrap(core::ge(a, b)); }
Tensor operator==(const Tensor& a, Scalar b) { return unwrap(core::eq(a, b)); }
Tensor operator!=(const Tensor& a, Scalar b) { return unwrap(core::ne(a, b)); }
Tensor operator<(const Tensor& a, Scalar b) { return unwrap(core::lt(a, b)); }
Tensor operator<=(const Tensor& a, Scalar b) { return unwrap(core::le(a, b)); }
Tensor operator>(const Tensor& a, Scalar b) { return unwrap(core::gt(a, b)); }
Tensor operator>=(const Tensor& a, Scalar b) { return unwrap(core::ge(a, b)); }

Status core::add_(Tensor& self, const Tensor& other) {
  EMBER_TRY(check_defined(self, "add_", "self"));
  EMBER_TRY(check_defined(other, "add_", "other"));
  return binary_(OpKind::Add, self, other);
}

Tensor& Tensor::add_(const Tensor& other) {
  unwrap(core::add_(*this, other));
  return *this;
}
Tensor& Tensor::add_(Scalar other) {
  unwrap(check_defined(*this, "add_", "self"));
  unwrap(binary_(OpKind::Add, *this, other));
  return *this;
}
Tensor& Tensor::sub_(const Tensor& other) {
  unwrap(check_defined(*this, "sub_", "self"));
  unwrap(check_defined(other, "sub_", "other"));
  unwrap(binary_(OpKind::Sub, *this, other));
  return *this;
}
Tensor& Tensor::sub_(Scalar other) {
  unwrap(check_defined(*this, "sub_", "self"));
  unwrap(binary_(OpKind::Sub, *this, other));
  return *this;
}
Tensor& Tensor::mul_(const Tensor& other) {
  unwrap(check_defined(*this, "mul_", "self"));
  unwrap(check_defined(other, "mul_", "other"));
  unwrap(binary_(OpKind::Mul, *this, other));
  return *this;
}
Tensor& Tensor::mul_(Scalar other) {
  unwrap(check_defined(*this, "mul_", "self"));
  unwrap(binary_(OpKind::Mul, *this, other));
  return *this;
}
Tensor& Tensor::div_(const Tensor& other) {
  unwrap(check_defined(*this, "div_", "self"));
  unwrap(check_defined(other, "div_", "other"));
  unwrap(binary_(OpKind::Div, *this, other));
  return *this;
}
Tensor& Tensor::div_(Scalar other) {
  unwrap(check_defined(*this, "div_", "self"));
  unwrap(binary_(OpKind::Div, *this, other));
  return *this;
}

// The RT_BINARY ops' cores and front-ends.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, ...) EMBER_BINARY_CORES(Name, name)
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
#undef EMBER_BINARY_CORES
#undef EMBER_BINARY_CORE

Result<Tensor> core::binary_op(OpKind op, const Tensor& a, const Tensor& b) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, ...) \
  case OpKind::Name:               \
    return core::name(a, b);
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
    default: break;
  }
  return fail(Status::NotSupported, "\"", op_name(op), "\" is not a binary elementwise op");
}

Tensor binary_op(OpKind op, const Tensor& a, const Tensor& b) { return unwrap(core::binary_op(op, a, b)); }

namespace {
Result<OpKind> rounding_op(std::string_view rounding_mode) {
  EMBER_CHECK(rounding_mode == "trunc" || rounding_mode == "floor", Status::InvalidArgument,
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", rounding_mode, "'");
  return rounding_mode == "trunc" ? OpKind::TruncDivide : OpKind::FloorDivide;
}
}  // namespace

Result<Tensor> core::div(const Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  EMBER_ASSIGN_OR_RETURN(const OpKind op, rounding_op(rounding_mode));
  return binary(op, a, b);
}
Result<Tensor> core::div(const Tensor& a, Scalar b, std::string_view rounding_mode) {
  EMBER_ASSIGN_OR_RETURN(const OpKind op, rounding_op(rounding_mode));
  return binary(op, a, b);
}
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  return unwrap(core::div(a, b, rounding_mode));
}
Tensor div(const Tensor& a, Scalar b, std::string_view rounding_mode) {
  return unwrap(core::div(a, b, rounding_mode));
}

// bitwise_not: x ^ all ones (true for bool).
Result<Tensor> core::bitwise_not(const Tensor& x) {
  EMBER_CHECK(is_integral(x.dtype(), /*include_bool=*/true), Status::NotSupported,
              "\"bitwise_not_cpu\" not implemented for '", dtype_legacy_name(x.dtype()), "'");
  return core::bitwise_xor(x, x.dtype() == DType::Bool ? Scalar(true) : Scalar(-1));
}
Tensor bitwise_not(const Tensor& x) { return unwrap(core::bitwise_not(x)); }

// As PyTorch composes them: x != x; |x| == inf; x == +-inf; x == x and |x| != inf.
Result<Tensor> core::isnan(const Tensor& x) { return core::ne(x, x); }
Result<Tensor> core::isinf(const Tensor& x) {
  if (!x.is_floating_point()) return core::full_like(x, 0, TensorOptions(DType::Bool));
  EMBER_ASSIGN_OR_RETURN(const Tensor magnitude, core::abs(x));
  return core::eq(magnitude, INFINITY);
}
Result<Tensor> core::isposinf(const Tensor& x) {
  return x.is_floating_point() ? core::eq(x, INFINITY) : core::full_like(x, 0, TensorOptions(DType::Bool));
}
Result<Tensor> core::isneginf(const Tensor& x) {
  return x.is_floating_point() ? core::eq(x, -INFINITY) : core::full_like(x, 0, TensorOptions(DType::Bool));
}
Result<Tensor> core::isfinite(const Tensor& x) {
  if (!x.is_floating_point()) return core::full_like(x, 1, TensorOptions(DType::Bool));
  EMBER_ASSIGN_OR_RETURN(const Tensor not_nan, core::eq(x, x));
  EMBER_ASSIGN_OR_RETURN(const Tensor magnitude, core::abs(x));
  EMBER_ASSIGN_OR_RETURN(const Tensor not_inf, core::ne(magnitude, INFINITY));
  return core::mul(not_nan, not_inf);
}
Tensor isnan(const Tensor& x) { return unwrap(core::isnan(x)); }
Tensor isinf(const Tensor& x) { return unwrap(core::isinf(x)); }
Tensor isposinf(const Tensor& x) { return unwrap(core::isposinf(x)); }
Tensor isneginf(const Tensor& x) { return unwrap(core::isneginf(x)); }
Tensor isfinite(const Tensor& x) { return unwrap(core::isfinite(x)); }

Result<Tensor> core::where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(condition.dtype() == DType::Bool, Status::DTypeMismatch,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_legacy_name(condition.dtype()));
  EMBER_TRY(check_same_device({condition, a, b}));
  EMBER_ASSIGN_OR_RETURN(const Shape condition_a, core::broadcast_shapes(condition.sizes(), a.sizes()));
  EMBER_ASSIGN_OR_RETURN(const Shape shape, core::broadcast_shapes(condition_a, b.sizes()));
  EMBER_ASSIGN_OR_RETURN(const DType dtype, core::result_type({a, b}));
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(const Tensor ca, core::to(a, dtype));
    EMBER_ASSIGN_OR_RETURN(const Tensor cb, core::to(b, dtype));
    EMBER_ASSIGN_OR_RETURN(out, new_output(shape, dtype, {ca, cb, condition}));
    EMBER_ASSIGN_OR_RETURN(const Tensor ea, core::expand(ca, shape));
    EMBER_ASSIGN_OR_RETURN(const Tensor eb, core::expand(cb, shape));
    EMBER_ASSIGN_OR_RETURN(const Tensor ec, core::expand(condition, shape));
    EMBER_TRY(run_kernel(OpKind::Where, {ea, eb, ec}, {out}));
  }
  if (Node* n = autograd::record(GradRule::Where, out, {a, b})) n->save(condition);
  return out;
}

Result<Tensor> core::where(const Tensor& condition, Scalar a, const Tensor& b) {
  EMBER_ASSIGN_OR_RETURN(const DType common, core::result_type({b}, {a}));
  EMBER_ASSIGN_OR_RETURN(const Tensor at, scalar_of(a, common, b.device()));
  return core::where(condition, at, b);
}

Result<Tensor> core::where(const Tensor& condition, const Tensor& a, Scalar b) {
  EMBER_ASSIGN_OR_RETURN(const DType common, core::result_type({a}, {b}));
  EMBER_ASSIGN_OR_RETURN(const Tensor bt, scalar_of(b, common, a.device()));
  return core::where(condition, a, bt);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return unwrap(core::where(condition, a, b));
}
Tensor where(const Tensor& condition, Scalar a, const Tensor& b) { return unwrap(core::where(condition, a, b)); }
Tensor where(const Tensor& condition, const Tensor& a, Scalar b) { return unwrap(core::where(condition, a, b)); }

Result<Tensor> core::clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  EMBER_CHECK(min || max, Status::InvalidArgument, "torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Scalar> bounds;
  if (min) bounds.push_back(*min);
  if (max) bounds.push_back(*max);
  EMBER_ASSIGN_OR_RETURN(const DType dtype, core::result_type({x}, bounds));
  EMBER_CHECK(dtype != DType::Bool, Status::NotSupported, "\"clamp\" not implemented for 'Bool'");
  ClampParams p;
  p.has_min = min.has_value();
  p.has_max = max.has_value();
  if (min) p.min = *min;
  if (max) p.max = *max;
  EMBER_ASSIGN_OR_RETURN(const Tensor cx, core::to(x, dtype));
  return unary(OpKind::Clamp, GradRule::Clamp, /*save_output=*/false, cx, p, /*to_float=*/false);
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return unwrap(core::clamp(x, min, max));
}

Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  unwrap(check_defined(*this, "clamp_", "self"));
  autograd::check_inplace(*this);
  unwrap(check_writable(*this));
  unwrap(assign_inplace(*this, clamp(*this, min, max)));
  return *this;
}

Result<Tensor> core::neg(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool, Status::InvalidArgument,
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
              "invert a mask, use the `~` or `logical_not()` operator instead.");
  return neg_impl(x, /*to_float=*/false);
}
Result<Tensor> core::abs(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "\"abs_cpu\" not implemented for 'Bool'");
  return abs_impl(x, /*to_float=*/false);
}
Result<Tensor> core::relu(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "Boolean inputs not supported for relu");
  return relu_impl(x, /*to_float=*/false);
}
// floor, ceil, round: integers are returned as they are (in their dtype), bool is refused.
Result<Tensor> core::floor(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "\"floor_vml_cpu\" not implemented for 'Bool'");
  return floor_impl(x, /*to_float=*/false);
}
Result<Tensor> core::ceil(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "\"ceil_vml_cpu\" not implemented for 'Bool'");
  return ceil_impl(x, /*to_float=*/false);
}
Result<Tensor> core::round(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "\"round_vml_cpu\" not implemented for 'Bool'");
  return round_impl(x, /*to_float=*/false);
}
Result<Tensor> core::sign(const Tensor& x) { return sign_impl(x, /*to_float=*/false); }  // every dtype, kept
// softsign: PyTorch's x / (1 + abs(x)): abs refuses bool, the division makes integers float32.
Result<Tensor> core::softsign(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "\"abs_cpu\" not implemented for 'Bool'");
  return softsign_impl(x, /*to_float=*/true);
}
Result<Tensor> core::gelu(const Tensor& x, std::string_view approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh", Status::InvalidArgument,
              "approximate argument must be either none or tanh.");
  EMBER_CHECK(x.is_floating_point(), Status::NotSupported, "\"GeluKernelImpl\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  return unary(OpKind::Gelu, GradRule::Gelu, /*save_output=*/false, x, GeluParams{approximate == "tanh"},
               /*to_float=*/false);
}
Tensor gelu(const Tensor& x, std::string_view approximate) { return unwrap(core::gelu(x, approximate)); }

Tensor& Tensor::relu_() {
  unwrap(check_defined(*this, "relu_", "self"));
  autograd::check_inplace(*this);
  unwrap(check_writable(*this));
  unwrap(assign_inplace(*this, relu(*this)));
  return *this;
}

Tensor Tensor::abs() const { return ember::abs(*this); }
Tensor Tensor::neg() const { return ember::neg(*this); }
Tensor Tensor::exp() const { return ember::exp(*this); }
Tensor Tensor::log() const { return ember::log(*this); }
Tensor Tensor::sqrt() const { return ember::sqrt(*this); }
Tensor Tensor::pow(const Tensor& exponent) const { return ember::pow(*this, exponent); }
Tensor Tensor::pow(Scalar exponent) const { return ember::pow(*this, exponent); }

}  // namespace ember
