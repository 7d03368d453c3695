// Constants of the `.ember` file format (schema: runtime/model/ember.fbs) and
// the mapping between op_params.h structs and the schema's attribute tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/core/status.h"
#include "runtime/graph/op_kind.h"
#include "runtime/graph/op_params.h"
#include "runtime/model/ember_generated.h"

namespace ember {

// The version write_model() writes. Readers accept 1..kFormatVersion; bump it
// only for a change old readers must refuse (appended fields need no bump).
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kMinFormatVersion = 1;
// Segments, and every tensor's data inside one, start at multiples of this.
constexpr uint64_t kSegmentAlignment = 64;
// Largest file a loader accepts (flatbuffers itself is limited to 2 GiB, the
// weights after it are not).
constexpr uint64_t kMaxModelFileSize = uint64_t{1} << 48;

// The attribute table an op's params struct is stored as (NONE for NoParams).
fb::OpAttrs expected_attrs(OpKind op);
const char* attrs_name(fb::OpAttrs a);

// Checks op `op`'s attributes (type, array lengths, enum values) and converts
// them. On failure returns InvalidModel and sets *error (without a prefix).
Status attrs_to_params(const fb::Operator& op, OpParams* params, std::string* error);

// Serializes `params` into `fbb`; *type receives the union type.
flatbuffers::Offset<void> params_to_attrs(flatbuffers::FlatBufferBuilder& fbb, const OpParams& params,
                                          fb::OpAttrs* type);

}  // namespace ember
