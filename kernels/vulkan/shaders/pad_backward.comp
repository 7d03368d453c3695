#version 450
// float32 values (pad_backward_body.glsl).
#define ELEM float
#include "pad_backward_body.glsl"
