#version 450
// Batched matrix product for few rows, float16 storage, float32 accumulation
// (matmul_rows.glsl); used only where the device has caps().float16.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define ELEM float16_t
#include "matmul_rows.glsl"
