// The op_params.h <-> ember.fbs attribute-table mapping.
#include "runtime/model/format.h"

#include <type_traits>

#include "runtime/core/error.h"
#include "runtime/model/format_fields.h"

namespace ember {
namespace {

// A params struct's attribute table: FieldAttrs when it lists its fields,
// else its own table (the structs of the first format version).
template <typename P>
struct AttrsOf {
  static_assert(has_fields<P>::value, "a params struct needs fields() (op_params.h) to be stored");
  static constexpr fb::OpAttrs value = fb::OpAttrs::FieldAttrs;
};
template <> struct AttrsOf<NoParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::NONE; };
template <> struct AttrsOf<ScalarParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::ScalarAttrs; };
template <> struct AttrsOf<GeluParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::GeluAttrs; };
template <> struct AttrsOf<ClampParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::ClampAttrs; };
template <> struct AttrsOf<ReduceParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::ReduceAttrs; };
template <> struct AttrsOf<SoftmaxParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::SoftmaxAttrs; };
template <> struct AttrsOf<NormParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::NormAttrs; };
template <> struct AttrsOf<Conv2dParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::Conv2dAttrs; };
template <> struct AttrsOf<Pool2dParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::Pool2dAttrs; };
template <> struct AttrsOf<PadParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::PadAttrs; };
template <> struct AttrsOf<DimsParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::DimsAttrs; };
template <> struct AttrsOf<AxisParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::AxisAttrs; };
template <> struct AttrsOf<LinearParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::LinearAttrs; };
template <> struct AttrsOf<UnaryParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::UnaryAttrs; };
// The run-time ops' params: never stored (attrs_to_params refuses those ops).
template <> struct AttrsOf<QLinearParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::NONE; };
template <> struct AttrsOf<QConv2dParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::NONE; };
template <> struct AttrsOf<Conv2dPairParams> { static constexpr fb::OpAttrs value = fb::OpAttrs::NONE; };

Status fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return Status::InvalidModel;
}

bool scalar_from_fb(const fb::ScalarValue* v, Scalar* out) {
  if (v == nullptr) return false;
  switch (v->kind()) {
    case static_cast<uint8_t>(Scalar::Kind::Bool): *out = Scalar(v->i() != 0); return true;
    case static_cast<uint8_t>(Scalar::Kind::Int): *out = Scalar(v->i()); return true;
    case static_cast<uint8_t>(Scalar::Kind::Float): *out = Scalar(v->d()); return true;
    default: return false;
  }
}

flatbuffers::Offset<fb::ScalarValue> scalar_to_fb(flatbuffers::FlatBufferBuilder& fbb, Scalar s) {
  const bool is_float = s.is_floating();
  return fb::CreateScalarValue(fbb, static_cast<uint8_t>(s.kind()), is_float ? 0 : s.to_int(),
                               is_float ? s.to_double() : 0.0);
}

// Copies a vector of exactly 2 values into out[2].
bool pair_from_fb(const flatbuffers::Vector<int64_t>* v, int64_t out[2]) {
  if (v == nullptr || v->size() != 2) return false;
  out[0] = v->Get(0);
  out[1] = v->Get(1);
  return true;
}

// An absent table is no activation.
bool activation_from_fb(const fb::ActivationAttrs* a, Activation* out) {
  if (a == nullptr) return true;
  if (a->kind() > static_cast<uint8_t>(ActivationKind::HardSwish)) return false;
  out->kind = static_cast<ActivationKind>(a->kind());
  out->min = a->min();
  out->max = a->max();
  return !(out->min > out->max);  // NaN bounds are refused too
}

flatbuffers::Offset<fb::ActivationAttrs> activation_to_fb(flatbuffers::FlatBufferBuilder& fbb,
                                                          const Activation& a) {
  if (a.kind == ActivationKind::None) return 0;
  return fb::CreateActivationAttrs(fbb, static_cast<uint8_t>(a.kind), a.min, a.max);
}

// Op `kind`'s params (of type P) from a FieldAttrs table.
template <typename P>
Status params_from_fields_as(OpKind kind, const fb::FieldAttrs& a, OpParams* params, std::string* error) {
  if constexpr (has_fields<P>::value) {
    P p;
    EMBER_TRY(fields_to_params(a, &p, error));
    *params = p;
    return Status::Ok;
  } else {
    return fail(error, str_cat("FieldAttrs for op ", op_name(kind), ", whose params have a table of their own"));
  }
}

Status params_from_fields(OpKind kind, const fb::FieldAttrs& a, OpParams* params, std::string* error) {
  switch (kind) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    return params_from_fields_as<Params>(kind, a, params, error);
#include "runtime/graph/ops.def"
#undef RT_OP
  }
  return fail(error, str_cat("unknown op ", static_cast<int>(kind)));
}

}  // namespace

fb::OpAttrs expected_attrs(OpKind op) {
  switch (op) {
#define RT_OP(Name, name, n_in, n_out, Params) \
  case OpKind::Name:                           \
    return AttrsOf<Params>::value;
#include "runtime/graph/ops.def"
#undef RT_OP
  }
  return fb::OpAttrs::NONE;
}

const char* attrs_name(fb::OpAttrs a) {
  if (a > fb::OpAttrs::MAX) return "unknown";
  return fb::EnumNameOpAttrs(a);
}

Status attrs_to_params(const fb::Operator& op, OpParams* params, std::string* error) {
  const OpKind kind = static_cast<OpKind>(op.op());
  if (static_cast<int>(kind) < kNumOps && is_run_time_op(kind))
    return fail(error, str_cat("op ", op_name(kind), " cannot appear in a model file"));
  const fb::OpAttrs want = expected_attrs(static_cast<OpKind>(op.op()));
  if (op.attrs_type() != want) {
    return fail(error, str_cat("attributes are ", attrs_name(op.attrs_type()), ", expected ",
                               attrs_name(want)));
  }
  if (want != fb::OpAttrs::NONE && op.attrs() == nullptr) {
    return fail(error, str_cat("attributes ", attrs_name(want), " are missing"));
  }
  switch (want) {
    case fb::OpAttrs::NONE:
      *params = NoParams{};
      return Status::Ok;
    case fb::OpAttrs::ScalarAttrs: {
      ScalarParams p;
      if (!scalar_from_fb(op.attrs_as_ScalarAttrs()->value(), &p.value))
        return fail(error, "ScalarAttrs: missing or invalid value");
      *params = p;
      return Status::Ok;
    }
    case fb::OpAttrs::GeluAttrs:
      *params = GeluParams{op.attrs_as_GeluAttrs()->tanh_approximation()};
      return Status::Ok;
    case fb::OpAttrs::UnaryAttrs:
      *params = UnaryParams{op.attrs_as_UnaryAttrs()->a(), op.attrs_as_UnaryAttrs()->b()};
      return Status::Ok;
    case fb::OpAttrs::ClampAttrs: {
      const auto* a = op.attrs_as_ClampAttrs();
      ClampParams p;
      p.has_min = a->has_min();
      p.has_max = a->has_max();
      if ((p.has_min && !scalar_from_fb(a->min(), &p.min)) ||
          (p.has_max && !scalar_from_fb(a->max(), &p.max)))
        return fail(error, "ClampAttrs: missing or invalid min/max");
      *params = p;
      return Status::Ok;
    }
    case fb::OpAttrs::ReduceAttrs: {
      const auto* a = op.attrs_as_ReduceAttrs();
      ReduceParams p;
      p.dims = a->dims();
      p.correction = a->correction();
      p.p = a->p();
      p.keepdim = a->keepdim();
      p.noop_empty = a->noop_empty();
      *params = p;
      return Status::Ok;
    }
    case fb::OpAttrs::SoftmaxAttrs:
      *params = SoftmaxParams{op.attrs_as_SoftmaxAttrs()->dim()};
      return Status::Ok;
    case fb::OpAttrs::NormAttrs: {
      const auto* a = op.attrs_as_NormAttrs();
      NormParams p;
      p.eps = a->eps();
      p.normalized_rank = a->normalized_rank();
      *params = p;
      return Status::Ok;
    }
    case fb::OpAttrs::Conv2dAttrs: {
      const auto* a = op.attrs_as_Conv2dAttrs();
      Conv2dParams p;
      if (!pair_from_fb(a->stride(), p.stride) || !pair_from_fb(a->padding(), p.padding) ||
          !pair_from_fb(a->dilation(), p.dilation))
        return fail(error, "Conv2dAttrs: stride, padding and dilation need 2 values each");
      p.groups = a->groups();
      if (!activation_from_fb(a->activation(), &p.activation))
        return fail(error, "Conv2dAttrs: invalid activation");
      *params = p;
      return Status::Ok;
    }
    case fb::OpAttrs::Pool2dAttrs: {
      const auto* a = op.attrs_as_Pool2dAttrs();
      Pool2dParams p;
      if (!pair_from_fb(a->kernel(), p.kernel) || !pair_from_fb(a->stride(), p.stride) ||
          !pair_from_fb(a->padding(), p.padding) || !pair_from_fb(a->dilation(), p.dilation))
        return fail(error, "Pool2dAttrs: kernel, stride, padding and dilation need 2 values each");
      p.ceil_mode = a->ceil_mode();
      p.count_include_pad = a->count_include_pad();
      p.divisor_override = a->divisor_override();
      *params = p;
      return Status::Ok;
    }
    case fb::OpAttrs::PadAttrs: {
      const auto* a = op.attrs_as_PadAttrs();
      PadParams p;
      if (a->mode() > static_cast<uint8_t>(PadMode::Circular))
        return fail(error, str_cat("PadAttrs: unknown mode ", int{a->mode()}));
      p.mode = static_cast<PadMode>(a->mode());
      const auto* before = a->before();
      const auto* after = a->after();
      const size_t nb = before ? before->size() : 0, na = after ? after->size() : 0;
      if (nb != na || nb > static_cast<size_t>(kMaxRank))
        return fail(error, str_cat("PadAttrs: before/after have ", nb, " and ", na,
                                   " values (equal, at most ", kMaxRank, " expected)"));
      for (size_t d = 0; d < nb; ++d) {
        p.before[d] = before->Get(static_cast<flatbuffers::uoffset_t>(d));
        p.after[d] = after->Get(static_cast<flatbuffers::uoffset_t>(d));
      }
      p.value = a->value();
      *params = p;
      return Status::Ok;
    }
    case fb::OpAttrs::DimsAttrs: {
      const auto* dims = op.attrs_as_DimsAttrs()->dims();
      const size_t n = dims ? dims->size() : 0;
      if (n > static_cast<size_t>(kMaxRank))
        return fail(error, str_cat("DimsAttrs: ", n, " dims, at most ", kMaxRank, " expected"));
      DimsParams p;
      p.rank = static_cast<int>(n);
      for (size_t d = 0; d < n; ++d) p.dims[d] = dims->Get(static_cast<flatbuffers::uoffset_t>(d));
      *params = p;
      return Status::Ok;
    }
    case fb::OpAttrs::AxisAttrs:
      *params = AxisParams{op.attrs_as_AxisAttrs()->axis()};
      return Status::Ok;
    case fb::OpAttrs::FieldAttrs:
      return params_from_fields(kind, *op.attrs_as_FieldAttrs(), params, error);
    case fb::OpAttrs::LinearAttrs: {
      LinearParams p;
      if (!activation_from_fb(op.attrs_as_LinearAttrs()->activation(), &p.activation))
        return fail(error, "LinearAttrs: invalid activation");
      *params = p;
      return Status::Ok;
    }
  }
  return fail(error, str_cat("unknown attributes type ", static_cast<int>(op.attrs_type())));
}

flatbuffers::Offset<void> params_to_attrs(flatbuffers::FlatBufferBuilder& fbb, const OpParams& params,
                                          fb::OpAttrs* type) {
  return std::visit(
      [&](const auto& p) -> flatbuffers::Offset<void> {
        using P = std::decay_t<decltype(p)>;
        *type = AttrsOf<P>::value;
        if constexpr (std::is_same_v<P, NoParams> || std::is_same_v<P, QLinearParams> ||
                      std::is_same_v<P, QConv2dParams> || std::is_same_v<P, Conv2dPairParams>) {
          return 0;  // the run-time ops' params: never written (the writer refuses those ops)
        } else if constexpr (std::is_same_v<P, ScalarParams>) {
          return fb::CreateScalarAttrs(fbb, scalar_to_fb(fbb, p.value)).Union();
        } else if constexpr (std::is_same_v<P, GeluParams>) {
          return fb::CreateGeluAttrs(fbb, p.tanh_approximation).Union();
        } else if constexpr (std::is_same_v<P, UnaryParams>) {
          return fb::CreateUnaryAttrs(fbb, p.a, p.b).Union();
        } else if constexpr (std::is_same_v<P, ClampParams>) {
          auto mn = scalar_to_fb(fbb, p.min);
          auto mx = scalar_to_fb(fbb, p.max);
          return fb::CreateClampAttrs(fbb, p.has_min, p.has_max, mn, mx).Union();
        } else if constexpr (std::is_same_v<P, ReduceParams>) {
          return fb::CreateReduceAttrs(fbb, p.dims, p.correction, p.p, p.keepdim, p.noop_empty).Union();
        } else if constexpr (std::is_same_v<P, SoftmaxParams>) {
          return fb::CreateSoftmaxAttrs(fbb, p.dim).Union();
        } else if constexpr (std::is_same_v<P, NormParams>) {
          return fb::CreateNormAttrs(fbb, p.eps, p.normalized_rank).Union();
        } else if constexpr (std::is_same_v<P, Conv2dParams>) {
          auto s = fbb.CreateVector(p.stride, 2);
          auto pad = fbb.CreateVector(p.padding, 2);
          auto d = fbb.CreateVector(p.dilation, 2);
          auto act = activation_to_fb(fbb, p.activation);
          return fb::CreateConv2dAttrs(fbb, s, pad, d, p.groups, act).Union();
        } else if constexpr (std::is_same_v<P, Pool2dParams>) {
          auto k = fbb.CreateVector(p.kernel, 2);
          auto s = fbb.CreateVector(p.stride, 2);
          auto pad = fbb.CreateVector(p.padding, 2);
          auto d = fbb.CreateVector(p.dilation, 2);
          return fb::CreatePool2dAttrs(fbb, k, s, pad, d, p.ceil_mode, p.count_include_pad,
                                       p.divisor_override)
              .Union();
        } else if constexpr (std::is_same_v<P, DimsParams>) {
          return fb::CreateDimsAttrs(fbb, fbb.CreateVector(p.dims, static_cast<size_t>(p.rank))).Union();
        } else if constexpr (std::is_same_v<P, AxisParams>) {
          return fb::CreateAxisAttrs(fbb, p.axis).Union();
        } else if constexpr (std::is_same_v<P, LinearParams>) {
          return fb::CreateLinearAttrs(fbb, activation_to_fb(fbb, p.activation)).Union();
        } else if constexpr (has_fields<P>::value) {
          return params_to_fields(fbb, p).Union();
        } else {
          static_assert(std::is_same_v<P, PadParams>, "append the new params struct here");
          // Trailing dims that pad nothing are still written: kMaxRank values each.
          auto b = fbb.CreateVector(p.before, static_cast<size_t>(kMaxRank));
          auto a = fbb.CreateVector(p.after, static_cast<size_t>(kMaxRank));
          return fb::CreatePadAttrs(fbb, static_cast<uint8_t>(p.mode), b, a, p.value).Union();
        }
      },
      params);
}

}  // namespace ember
