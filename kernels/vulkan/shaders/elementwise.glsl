// Shared by the elementwise shaders (copy, fill, unary, binary, where): typed
// access to strided operands and the index arithmetic over up to 4 dims.
//
// Before including, a shader defines:
//   EMBER_EXT       1: also the 8-bit, 16-bit and 64-bit element types (needs
//                   8/16-bit storage and shaderInt64: the kernel checks caps);
//                   0: float32 and int32 only (no extension).
//   EMBER_OPERANDS  the number of bindings (binding 0 is the output).
//   EMBER_PUSH_EXTRA  more push-constant members after the layout (may be empty).
//
// Element types, by specialization constant 3 + binding (kernels/vulkan/elementwise.h):
//   0 float32, 1 float16, 2 int32, 3 int64, 4 uint8, 5 int8, 6 bool (1 byte).
// Every binding is declared once per element type (aliases of one storage
// buffer); a kernel reads each through the alias its dtype names. Arithmetic
// is float32 for the floating types (float16 is converted on load and store),
// int32 for int32 and the 8-bit types (stores truncate, as C++ casts do), and
// int64 for int64.
#if EMBER_EXT
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif

#include "common.glsl"

const uint DT_F32 = 0u;
const uint DT_F16 = 1u;
const uint DT_I32 = 2u;
const uint DT_I64 = 3u;
const uint DT_U8 = 4u;
const uint DT_I8 = 5u;
const uint DT_BOOL = 6u;

layout(constant_id = 1) const uint OP = 0u;    // the op, for shaders that hold several
layout(constant_id = 2) const uint RANK = 1u;  // 1..4 dims after coalescing

// sizes of dims 1..3 (dim 0 follows from n), each operand's first element and
// strides (elements, [operand * 4 + dim]).
layout(push_constant) uniform Push {
  uint n;
  uint size[3];
  uint first[EMBER_OPERANDS];
  int stride[4 * EMBER_OPERANDS];
  EMBER_PUSH_EXTRA
} p;

bool is_float_type(uint t) { return t == DT_F32 || t == DT_F16; }

// The coordinates of flat index i (row-major over the padded 4-D shape).
uvec4 coords(uint i) {
  uvec4 c = uvec4(0u);
  if (RANK == 1u) {
    c.w = i;
    return c;
  }
  c.w = i % p.size[2];
  i /= p.size[2];
  if (RANK == 2u) {
    c.z = i;
    return c;
  }
  c.z = i % p.size[1];
  i /= p.size[1];
  if (RANK == 3u) {
    c.y = i;
    return c;
  }
  c.y = i % p.size[0];
  c.x = i / p.size[0];
  return c;
}

// The element index of operand k at coordinates c.
uint offset_of(uint k, uvec4 c) {
  return p.first[k] + c.x * uint(p.stride[4 * k]) + c.y * uint(p.stride[4 * k + 1]) +
         c.z * uint(p.stride[4 * k + 2]) + c.w * uint(p.stride[4 * k + 3]);
}

#if EMBER_EXT
#define EMBER_EXT_BUFFERS(B)                                                                 \
  layout(std430, set = 0, binding = B) buffer Buf##B##F16 { float16_t v[]; } b##B##_f16;    \
  layout(std430, set = 0, binding = B) buffer Buf##B##I64 { int64_t v[]; } b##B##_i64;      \
  layout(std430, set = 0, binding = B) buffer Buf##B##U8 { uint8_t v[]; } b##B##_u8;        \
  layout(std430, set = 0, binding = B) buffer Buf##B##I8 { int8_t v[]; } b##B##_i8;
#define EMBER_EXT_LOAD_F(B, i)                                                 \
  if (DT##B == DT_F16) return float(b##B##_f16.v[i]);                         \
  if (DT##B == DT_I64) return float(b##B##_i64.v[i]);                         \
  if (DT##B == DT_U8 || DT##B == DT_BOOL) return float(uint(b##B##_u8.v[i])); \
  if (DT##B == DT_I8) return float(int(b##B##_i8.v[i]));
#define EMBER_EXT_LOAD_I(B, i)                                               \
  if (DT##B == DT_F16) return int(float(b##B##_f16.v[i]));                  \
  if (DT##B == DT_I64) return int(b##B##_i64.v[i]);                         \
  if (DT##B == DT_U8 || DT##B == DT_BOOL) return int(uint(b##B##_u8.v[i])); \
  if (DT##B == DT_I8) return int(b##B##_i8.v[i]);
#define EMBER_EXT_STORE(B, i, F16, I64, I32, NONZERO)               \
  if (DT##B == DT_F16) b##B##_f16.v[i] = float16_t(F16);           \
  if (DT##B == DT_I64) b##B##_i64.v[i] = I64;                      \
  if (DT##B == DT_U8) b##B##_u8.v[i] = uint8_t(uint(I32) & 255u);  \
  if (DT##B == DT_I8) b##B##_i8.v[i] = int8_t(I32);                \
  if (DT##B == DT_BOOL) b##B##_u8.v[i] = uint8_t((NONZERO) ? 1u : 0u);
// int64 loads and stores (int64 arithmetic).
#define EMBER_EXT_INT64(B)                                                                     \
  int64_t load_l##B(uint i) {                                                                  \
    if (DT##B == DT_I64) return b##B##_i64.v[i];                                               \
    return int64_t(load_i##B(i));                                                              \
  }                                                                                            \
  void store_l##B(uint i, int64_t x) {                                                         \
    if (DT##B == DT_F32) b##B##_f32.v[i] = float(x);                                           \
    if (DT##B == DT_I32) b##B##_i32.v[i] = int(x);                                             \
    EMBER_EXT_STORE(B, i, float(x), x, int(x), x != 0)                                         \
  }
#else
#define EMBER_EXT_BUFFERS(B)
#define EMBER_EXT_LOAD_F(B, i)
#define EMBER_EXT_LOAD_I(B, i)
#define EMBER_EXT_STORE(B, i, F16, I64, I32, NONZERO)
#define EMBER_EXT_INT64(B)
#endif

// Binding B: its dtype (spec constant 3 + B), its aliases, and
// load_fB/load_iB (as float / int) and store_fB/store_iB (converting as C++
// casts do: float -> int truncates, anything -> bool is `!= 0`, NaN included).
#define EMBER_OPERAND(B)                                                                      \
  layout(constant_id = 3 + B) const uint DT##B = 0u;                                          \
  layout(std430, set = 0, binding = B) buffer Buf##B##F32 { float v[]; } b##B##_f32;          \
  layout(std430, set = 0, binding = B) buffer Buf##B##I32 { int v[]; } b##B##_i32;            \
  EMBER_EXT_BUFFERS(B)                                                                        \
  float load_f##B(uint i) {                                                                   \
    if (DT##B == DT_F32) return b##B##_f32.v[i];                                              \
    if (DT##B == DT_I32) return float(b##B##_i32.v[i]);                                       \
    EMBER_EXT_LOAD_F(B, i)                                                                    \
    return 0.0;                                                                               \
  }                                                                                           \
  int load_i##B(uint i) {                                                                     \
    if (DT##B == DT_I32) return b##B##_i32.v[i];                                              \
    if (DT##B == DT_F32) return int(b##B##_f32.v[i]);                                         \
    EMBER_EXT_LOAD_I(B, i)                                                                    \
    return 0;                                                                                 \
  }                                                                                           \
  void store_f##B(uint i, float x) {                                                          \
    if (DT##B == DT_F32) b##B##_f32.v[i] = x;                                                 \
    if (DT##B == DT_I32) b##B##_i32.v[i] = int(x);                                            \
    EMBER_EXT_STORE(B, i, x, int64_t(x), int(x), !(x == 0.0))                                 \
  }                                                                                           \
  void store_i##B(uint i, int x) {                                                            \
    if (DT##B == DT_F32) b##B##_f32.v[i] = float(x);                                          \
    if (DT##B == DT_I32) b##B##_i32.v[i] = x;                                                 \
    EMBER_EXT_STORE(B, i, float(x), int64_t(x), x, x != 0)                                    \
  }                                                                                           \
  EMBER_EXT_INT64(B)
