#version 450
// Batched matrix product, float32 (matmul_gemm.glsl).
#define ELEM float
#include "matmul_gemm.glsl"
