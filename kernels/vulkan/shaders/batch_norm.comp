#version 450
// float32 values and statistics (batch_norm_body.glsl).
#define ELEM float
#define PARAM float
#include "batch_norm_body.glsl"
