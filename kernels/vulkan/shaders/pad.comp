#version 450
// float32 values (pad_body.glsl).
#define ELEM float
#include "pad_body.glsl"
