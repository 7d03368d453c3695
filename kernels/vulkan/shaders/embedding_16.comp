#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// 16-bit weights, bits copied through float16_t (embedding_body.glsl).
#define WORD float16_t
#include "embedding_body.glsl"
