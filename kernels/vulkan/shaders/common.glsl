// Shared by every ember compute shader: the workgroup size comes from
// specialization constant 0 (the kernel picks it), 1-D by default.
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

// The flat index of this invocation over a 2-D grid of workgroups (large
// tensors need more than maxComputeWorkGroupCount[0] groups).
uint flat_index() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}
