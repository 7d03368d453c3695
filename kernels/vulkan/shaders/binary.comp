#version 450
// binary on float32 and int32 tensors (no extension); see binary.glsl.
#define EMBER_EXT 0
#include "binary.glsl"
