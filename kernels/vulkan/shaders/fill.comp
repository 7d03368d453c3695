#version 450
// fill on float32 and int32 tensors (no extension); see fill.glsl.
#define EMBER_EXT 0
#include "fill.glsl"
