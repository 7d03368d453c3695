#version 450
// float32 values (layer_norm_body.glsl).
#define ELEM float
#include "layer_norm_body.glsl"
