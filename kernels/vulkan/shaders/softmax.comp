#version 450
// float32 values (softmax_body.glsl).
#define ELEM float
#include "softmax_body.glsl"
