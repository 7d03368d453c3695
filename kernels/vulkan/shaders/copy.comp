#version 450
// copy on float32 and int32 tensors (no extension); see copy.glsl.
#define EMBER_EXT 0
#include "copy.glsl"
