#version 450
// unary on float32 and int32 tensors (no extension); see unary.glsl.
#define EMBER_EXT 0
#include "unary.glsl"
