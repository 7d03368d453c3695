#version 450
// float32 values (pool_backward_body.glsl).
#define ELEM float
#include "pool_backward_body.glsl"
