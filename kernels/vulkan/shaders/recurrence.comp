#version 450
// float32 values (recurrence_body.glsl).
#define ELEM float
#include "recurrence_body.glsl"
