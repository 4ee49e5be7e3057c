extern "C" __global__ void cubejit_kernel(float* p_x, unsigned int n_x, float* p_out, unsigned int n_out) {
    const unsigned int pos_absolute_pos = (((blockIdx.x * blockDim.x) + threadIdx.x) + (((blockIdx.y * blockDim.y) + threadIdx.y) * (gridDim.x * blockDim.x)) + (((blockIdx.z * blockDim.z) + threadIdx.z) * (gridDim.x * blockDim.x) * (gridDim.y * blockDim.y)));
    unsigned int v_i = 0u;
    unsigned int v_n = 0u;
    float v_left = 0x0.0p+0f;
    float v_right = 0x0.0p+0f;
    unsigned int v_k = 0u;
    v_i = pos_absolute_pos;
    v_n = n_x;
    if ((v_i < v_n)) {
        v_left = ((v_i > 0u) ? p_x[(v_i - 1u)] : 0x0.0p+0f);
        v_right = 0x0.0p+0f;
        if ((((v_i + 1u) < v_n) && (p_x[(v_i + 1u)] > 0x0.0p+0f))) {
            v_right = p_x[(v_i + 1u)];
        }
        v_k = v_i;
        while (((v_k < v_n) && (p_x[v_k] > (-0x1.0000000000000p+0f)))) {
            v_k = (v_k + 4u);
        }
        p_out[v_i] = ((v_left + v_right) + ((float)(v_k)));
    }
}
