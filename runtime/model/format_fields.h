// Params stored field by field (op_params.h: has_fields): a params struct that
// lists its fields is written as one FieldAttrs table (ember.fbs) — integer,
// bool and enum fields in `ints`, floating-point ones in `floats`, fixed-size
// arrays element by element, in the order fields() lists them — so a new
// params struct needs no attribute table and no conversion code of its own.
// Fields are only appended: a file from before a field existed leaves it at its
// default; a file with more values than the struct has fields is refused.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/graph/op_params.h"
#include "runtime/model/ember_generated.h"

namespace ember {
namespace fields_detail {

template <typename T>
void put(const T& v, std::vector<int64_t>& ints, std::vector<double>& floats) {
  if constexpr (std::is_array_v<T>) {
    for (const auto& e : v) put(e, ints, floats);
  } else if constexpr (std::is_floating_point_v<T>) {
    floats.push_back(static_cast<double>(v));
  } else {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T>,
                  "a stored params field is an integer, bool, enum, floating point or an array of them");
    ints.push_back(static_cast<int64_t>(v));
  }
}

// Reads the fields in order; a value the file does not have leaves the default.
struct Reader {
  const flatbuffers::Vector<int64_t>* ints;
  const flatbuffers::Vector<double>* floats;
  uint32_t next_int = 0, next_float = 0;

  // False when the stored value does not fit the field's type.
  template <typename T>
  bool get(T& v) {
    if constexpr (std::is_array_v<T>) {
      for (auto& e : v) {
        if (!get(e)) return false;
      }
      return true;
    } else if constexpr (std::is_floating_point_v<T>) {
      if (floats != nullptr && next_float < floats->size()) v = static_cast<T>(floats->Get(next_float++));
      return true;
    } else {
      if (ints == nullptr || next_int >= ints->size()) return true;
      const int64_t x = ints->Get(next_int++);
      using U = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>, std::common_type<T>>::type;
      if constexpr (std::is_same_v<U, bool>) {
        if (x != 0 && x != 1) return false;
      } else if constexpr (std::is_signed_v<U>) {
        if (x < std::numeric_limits<U>::min() || x > std::numeric_limits<U>::max()) return false;
      } else {
        if (x < 0 || static_cast<uint64_t>(x) > std::numeric_limits<U>::max()) return false;
      }
      v = static_cast<T>(static_cast<U>(x));
      return true;
    }
  }
};

}  // namespace fields_detail

// Whether P checks its values (bool valid() const).
template <typename P, typename = void>
struct has_valid : std::false_type {};
template <typename P>
struct has_valid<P, std::void_t<decltype(std::declval<const P&>().valid())>> : std::true_type {};

template <typename P>
flatbuffers::Offset<fb::FieldAttrs> params_to_fields(flatbuffers::FlatBufferBuilder& fbb, const P& p) {
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::apply([&](auto... member) { (fields_detail::put(p.*member, ints, floats), ...); }, P::fields());
  return fb::CreateFieldAttrs(fbb, fbb.CreateVector(ints), fbb.CreateVector(floats));
}

// On failure returns InvalidModel and sets *error.
template <typename P>
Status fields_to_params(const fb::FieldAttrs& a, P* params, std::string* error) {
  P p;
  fields_detail::Reader r{a.ints(), a.floats()};
  const bool fit = std::apply([&](auto... member) { return (r.get(p.*member) && ...); }, P::fields());
  if (!fit) return report_error(error, Status::InvalidModel, "FieldAttrs: a value out of range for its field");
  const uint32_t ni = a.ints() != nullptr ? a.ints()->size() : 0;
  const uint32_t nf = a.floats() != nullptr ? a.floats()->size() : 0;
  if (r.next_int != ni || r.next_float != nf)
    return report_error(error, Status::InvalidModel, "FieldAttrs: ", ni, " integer and ", nf,
                        " floating-point values, the op's parameters have ", r.next_int, " and ", r.next_float,
                        " (a file from a newer ember?)");
  if constexpr (has_valid<P>::value) {
    if (!p.valid()) return report_error(error, Status::InvalidModel, "FieldAttrs: values the op's parameters refuse");
  }
  *params = p;
  return Status::Ok;
}

}  // namespace ember
