#version 450
// float32 values (reduce_body.glsl).
#define ELEM float
#include "reduce_body.glsl"
