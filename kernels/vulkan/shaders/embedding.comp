#version 450
// 32-bit weights (embedding_body.glsl).
#define WORD uint
#include "embedding_body.glsl"
