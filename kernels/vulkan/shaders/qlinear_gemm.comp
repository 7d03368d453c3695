#version 450
// The dynamic int8 Linear GEMM, portable: bytes unpacked and multiplied.
#include "qlinear_gemm.glsl"

int dot4(uint wv, uint xv) {
  int s = 0;
  for (int j = 0; j < 4; ++j) s += bitfieldExtract(int(wv), 8 * j, 8) * int(bitfieldExtract(xv, 8 * j, 8));
  return s;
}
