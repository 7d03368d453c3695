#version 450
// Direct 2-D convolution, float32 (conv2d_direct.glsl).
#define ELEM float
#include "conv2d_direct.glsl"
