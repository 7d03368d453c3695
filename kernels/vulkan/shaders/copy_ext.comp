#version 450
// copy on every supported dtype (8/16-bit storage, int64); see copy.glsl.
#define EMBER_EXT 1
#include "copy.glsl"
