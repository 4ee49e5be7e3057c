extern "C" __global__ void cubejit_kernel(float* p_x, unsigned int n_x, float* p_out, unsigned int n_out) {
    __shared__ __align__(16) float s_shared[32];
    const unsigned int pos_absolute_pos = (((blockIdx.x * blockDim.x) + threadIdx.x) + (((blockIdx.y * blockDim.y) + threadIdx.y) * (gridDim.x * blockDim.x)) + (((blockIdx.z * blockDim.z) + threadIdx.z) * (gridDim.x * blockDim.x) * (gridDim.y * blockDim.y)));
    const unsigned int pos_unit_pos = (threadIdx.x + (threadIdx.y * blockDim.x) + (threadIdx.z * blockDim.x * blockDim.y));
    unsigned int v_u = 0u;
    v_u = pos_unit_pos;
    s_shared[(v_u + 1u)] = p_x[pos_absolute_pos];
    __syncthreads();
    p_out[pos_absolute_pos] = s_shared[v_u];
}
