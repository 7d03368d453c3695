#version 450
// The dynamic int8 Linear GEMM on VK_KHR_shader_integer_dot_product: OpSUDotKHR
// on packed 4 x 8-bit vectors (signed weights, unsigned activations). glslang
// here predates GL_EXT_integer_dot_product, so the instruction is emitted
// through GL_EXT_spirv_intrinsics. Only dispatched when caps().integer_dot_product.
#extension GL_EXT_spirv_intrinsics : require
#include "qlinear_gemm.glsl"

// SPV_KHR_integer_dot_product: capabilities DotProductKHR (6019) and
// DotProductInput4x8BitPackedKHR (6018); OpSUDotKHR = 4452; format 0 = PackedVectorFormat4x8Bit.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int sudot_packed(int a, uint b, spirv_literal int format);

int dot4(uint wv, uint xv) { return sudot_packed(int(wv), xv, 0); }
