#version 450
// Depthwise 2-D convolution, float32 (conv2d_depthwise.glsl).
#define ELEM float
#include "conv2d_depthwise.glsl"
