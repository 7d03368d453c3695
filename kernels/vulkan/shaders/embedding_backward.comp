#version 450
// float32 values (embedding_backward_body.glsl).
#define ELEM float
#include "embedding_backward_body.glsl"
