#version 450
// binary on every supported dtype (8/16-bit storage, int64); see binary.glsl.
#define EMBER_EXT 1
#include "binary.glsl"
