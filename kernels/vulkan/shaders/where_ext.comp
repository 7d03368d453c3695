#version 450
// where on every dtype (cond is bool: 8-bit storage; also 16-bit, int64); see where.glsl.
#define EMBER_EXT 1
#include "where.glsl"
