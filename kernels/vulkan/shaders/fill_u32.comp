#version 450
// out[i] = value for a contiguous 32-bit tensor (float32 or int32: the bits).
#include "common.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint out_[]; };
layout(push_constant) uniform Push {
  uint first;
  uint n;
  uint bits;
} p;

void main() {
  const uint i = flat_index();
  if (i < p.n) out_[p.first + i] = p.bits;
}
