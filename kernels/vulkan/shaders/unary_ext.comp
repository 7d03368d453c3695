#version 450
// unary on every supported dtype (8/16-bit storage, int64); see unary.glsl.
#define EMBER_EXT 1
#include "unary.glsl"
