#version 450
// Direct 2-D convolution, float16 storage, float32 accumulation (conv2d_direct.glsl);
// used only where the device has caps().float16.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define ELEM float16_t
#include "conv2d_direct.glsl"
