#version 450
// Batched matrix product for few rows, float32 (matmul_rows.glsl).
#define ELEM float
#include "matmul_rows.glsl"
