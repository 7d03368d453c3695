#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// float16 values, float32 arithmetic (recurrence_body.glsl).
#define ELEM float16_t
#include "recurrence_body.glsl"
