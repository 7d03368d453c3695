#version 450
// Batched matrix product, float32 (matmul_tiled.glsl).
#define ELEM float
#include "matmul_tiled.glsl"
