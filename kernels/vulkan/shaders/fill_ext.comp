#version 450
// fill on every supported dtype (8/16-bit storage, int64); see fill.glsl.
#define EMBER_EXT 1
#include "fill.glsl"
