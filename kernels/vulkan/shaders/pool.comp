#version 450
// float32 values (pool_body.glsl).
#define ELEM float
#include "pool_body.glsl"
