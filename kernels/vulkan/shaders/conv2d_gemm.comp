#version 450
// 2-D convolution as an implicit GEMM, float32 (conv2d_gemm.glsl).
#define ELEM float
#include "conv2d_gemm.glsl"
