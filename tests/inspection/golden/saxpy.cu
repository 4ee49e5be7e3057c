// cubejit: the no-alias form runs 4 cubes per CUDA block

extern "C" __global__ void cubejit_kernel(float p_a, const float* __restrict__ p_x, unsigned int n_x, const float* __restrict__ p_y, unsigned int n_y, float* __restrict__ p_out, unsigned int n_out, unsigned int p_cube_count_x) {
    const unsigned int p_cube_pos_x_0 = (blockIdx.x * 4u);
    const unsigned int p_cube_pos_x_1 = (p_cube_pos_x_0 + 1u);
    const unsigned int p_cube_pos_x_2 = (p_cube_pos_x_0 + 2u);
    const unsigned int p_cube_pos_x_3 = (p_cube_pos_x_0 + 3u);
    const unsigned int p_absolute_pos_0 = (((p_cube_pos_x_0 * blockDim.x) + threadIdx.x) + (((blockIdx.y * blockDim.y) + threadIdx.y) * (p_cube_count_x * blockDim.x)) + (((blockIdx.z * blockDim.z) + threadIdx.z) * (p_cube_count_x * blockDim.x) * (gridDim.y * blockDim.y)));
    const unsigned int p_absolute_pos_1 = (((p_cube_pos_x_1 * blockDim.x) + threadIdx.x) + (((blockIdx.y * blockDim.y) + threadIdx.y) * (p_cube_count_x * blockDim.x)) + (((blockIdx.z * blockDim.z) + threadIdx.z) * (p_cube_count_x * blockDim.x) * (gridDim.y * blockDim.y)));
    const unsigned int p_absolute_pos_2 = (((p_cube_pos_x_2 * blockDim.x) + threadIdx.x) + (((blockIdx.y * blockDim.y) + threadIdx.y) * (p_cube_count_x * blockDim.x)) + (((blockIdx.z * blockDim.z) + threadIdx.z) * (p_cube_count_x * blockDim.x) * (gridDim.y * blockDim.y)));
    const unsigned int p_absolute_pos_3 = (((p_cube_pos_x_3 * blockDim.x) + threadIdx.x) + (((blockIdx.y * blockDim.y) + threadIdx.y) * (p_cube_count_x * blockDim.x)) + (((blockIdx.z * blockDim.z) + threadIdx.z) * (p_cube_count_x * blockDim.x) * (gridDim.y * blockDim.y)));
    bool v_live_0 = false;
    bool v_live_1 = false;
    bool v_live_2 = false;
    bool v_live_3 = false;
    unsigned int v_i_0 = 0u;
    unsigned int v_i_1 = 0u;
    unsigned int v_i_2 = 0u;
    unsigned int v_i_3 = 0u;
    float v_stored_0_1 = 0x0.0p+0f;
    float v_stored_1_1 = 0x0.0p+0f;
    float v_stored_2_1 = 0x0.0p+0f;
    float v_stored_3_1 = 0x0.0p+0f;
    v_live_0 = ((p_cube_pos_x_0 < p_cube_count_x) && (p_absolute_pos_0 < n_out));
    v_live_1 = ((p_cube_pos_x_1 < p_cube_count_x) && (p_absolute_pos_1 < n_out));
    v_live_2 = ((p_cube_pos_x_2 < p_cube_count_x) && (p_absolute_pos_2 < n_out));
    v_live_3 = ((p_cube_pos_x_3 < p_cube_count_x) && (p_absolute_pos_3 < n_out));
    if ((((v_live_0 && v_live_1) && v_live_2) && v_live_3)) {
        v_i_0 = p_absolute_pos_0;
        v_stored_0_1 = ((p_a * p_x[v_i_0]) + p_y[v_i_0]);
        v_i_1 = p_absolute_pos_1;
        v_stored_1_1 = ((p_a * p_x[v_i_1]) + p_y[v_i_1]);
        v_i_2 = p_absolute_pos_2;
        v_stored_2_1 = ((p_a * p_x[v_i_2]) + p_y[v_i_2]);
        v_i_3 = p_absolute_pos_3;
        v_stored_3_1 = ((p_a * p_x[v_i_3]) + p_y[v_i_3]);
        p_out[v_i_0] = v_stored_0_1;
        p_out[v_i_1] = v_stored_1_1;
        p_out[v_i_2] = v_stored_2_1;
        p_out[v_i_3] = v_stored_3_1;
    } else {
        if (v_live_0) {
            v_i_0 = p_absolute_pos_0;
            p_out[v_i_0] = ((p_a * p_x[v_i_0]) + p_y[v_i_0]);
        }
        if (v_live_1) {
            v_i_1 = p_absolute_pos_1;
            p_out[v_i_1] = ((p_a * p_x[v_i_1]) + p_y[v_i_1]);
        }
        if (v_live_2) {
            v_i_2 = p_absolute_pos_2;
            p_out[v_i_2] = ((p_a * p_x[v_i_2]) + p_y[v_i_2]);
        }
        if (v_live_3) {
            v_i_3 = p_absolute_pos_3;
            p_out[v_i_3] = ((p_a * p_x[v_i_3]) + p_y[v_i_3]);
        }
    }
}
