// NumPy `.npy` files <-> Tensor (the format numpy.save writes, versions 1.0,
// 2.0 and 3.0), for the `ember` CLI's inputs and outputs.
//
// dtypes (descr): float32 '<f4', float16 '<f2', float64 '<f8', int64 '<i8',
// int32 '<i4', int16 '<i2', int8 '|i1', uint8 '|u1', uint16 '<u2', uint32
// '<u4', uint64 '<u8', bool '|b1'; the types numpy lacks (bfloat16, the float8
// and float4 formats, int4/uint4/int2/uint2, one element per byte) as the raw
// '|V2' / '|V1' that numpy saves ml_dtypes' arrays as: written so, read so
// when the caller says which dtype the bytes hold (`raw_as`). Data is
// little-endian, C order. Malformed files are errors that name the problem
// (bad magic, truncated header or data, unknown or big-endian descr,
// fortran_order, shape overflow, data size mismatch), never a crash; nothing is
// allocated before the file is known to hold the bytes the header promises.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/tensor/tensor.h"

namespace ember {

// Reads `path` into a new contiguous CPU tensor. On failure returns the Status
// (IoError: cannot open or read; InvalidArgument: malformed; NotSupported: a
// valid file ember cannot represent) and sets *error (when non-null), e.g.
// "'x.npy': fortran_order True is not supported (write a C-order array)".
// raw_as: the dtype a '|V1' / '|V2' file holds (the model's input dtype).
Result<Tensor> read_npy(const std::string& path, std::string* error = nullptr,
                        std::optional<DType> raw_as = std::nullopt);

// The same from bytes in memory; `name` only labels the messages.
Result<Tensor> parse_npy(const void* data, size_t size, const std::string& name = "<memory>",
                         std::string* error = nullptr, std::optional<DType> raw_as = std::nullopt);

// The bytes of the .npy file for `t` (a CPU tensor, any strides; written in C
// order, version 1.0 unless the header needs 2.0).
Status serialize_npy(const Tensor& t, std::vector<std::byte>* out, std::string* error = nullptr);

// serialize_npy(), then writes `path` atomically: a temporary file next to it
// ("<path>.tmp.<pid>"), fsync, rename. On failure the temporary is removed and
// `path` is left as it was.
Status write_npy(const std::string& path, const Tensor& t, std::string* error = nullptr);

// The descr ember writes for `dtype` ("<f4", ..., "|V2" for bfloat16).
const char* npy_descr(DType dtype);

}  // namespace ember
