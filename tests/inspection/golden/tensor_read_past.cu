// cubejit: the no-alias form runs 4 cubes per CUDA block

static __device__ __forceinline__ unsigned int cj_floordiv_u32(unsigned int a, unsigned int b) {
    return b == 0 ? 0 : a / b;
}

static __device__ __forceinline__ unsigned int cj_mod_u32(unsigned int a, unsigned int b) {
    return b == 0 ? 0 : a % b;
}

extern "C" __global__ void cubejit_kernel(const float* __restrict__ p_t, unsigned int r_t, unsigned int s_t_0, unsigned int s_t_1, unsigned int d_t_0, unsigned int d_t_1, float* __restrict__ p_out, unsigned int n_out, unsigned int p_cube_count_x) {
    const unsigned int n_t = s_t_0 * s_t_1;
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
    unsigned int v_r_0 = 0u;
    unsigned int v_c_0 = 0u;
    unsigned int v_i_1 = 0u;
    unsigned int v_r_1 = 0u;
    unsigned int v_c_1 = 0u;
    unsigned int v_i_2 = 0u;
    unsigned int v_r_2 = 0u;
    unsigned int v_c_2 = 0u;
    unsigned int v_i_3 = 0u;
    unsigned int v_r_3 = 0u;
    unsigned int v_c_3 = 0u;
    float v_stored_0_3 = 0x0.0p+0f;
    float v_stored_1_3 = 0x0.0p+0f;
    float v_stored_2_3 = 0x0.0p+0f;
    float v_stored_3_3 = 0x0.0p+0f;
    v_live_0 = ((p_cube_pos_x_0 < p_cube_count_x) && (p_absolute_pos_0 < n_out));
    v_live_1 = ((p_cube_pos_x_1 < p_cube_count_x) && (p_absolute_pos_1 < n_out));
    v_live_2 = ((p_cube_pos_x_2 < p_cube_count_x) && (p_absolute_pos_2 < n_out));
    v_live_3 = ((p_cube_pos_x_3 < p_cube_count_x) && (p_absolute_pos_3 < n_out));
    if ((((v_live_0 && v_live_1) && v_live_2) && v_live_3)) {
        v_i_0 = p_absolute_pos_0;
        v_r_0 = cj_floordiv_u32(v_i_0, s_t_1);
        v_c_0 = cj_mod_u32(v_i_0, s_t_1);
        v_stored_0_3 = p_t[((v_r_0 * d_t_0) + (v_c_0 + 1u))];
        v_i_1 = p_absolute_pos_1;
        v_r_1 = cj_floordiv_u32(v_i_1, s_t_1);
        v_c_1 = cj_mod_u32(v_i_1, s_t_1);
        v_stored_1_3 = p_t[((v_r_1 * d_t_0) + (v_c_1 + 1u))];
        v_i_2 = p_absolute_pos_2;
        v_r_2 = cj_floordiv_u32(v_i_2, s_t_1);
        v_c_2 = cj_mod_u32(v_i_2, s_t_1);
        v_stored_2_3 = p_t[((v_r_2 * d_t_0) + (v_c_2 + 1u))];
        v_i_3 = p_absolute_pos_3;
        v_r_3 = cj_floordiv_u32(v_i_3, s_t_1);
        v_c_3 = cj_mod_u32(v_i_3, s_t_1);
        v_stored_3_3 = p_t[((v_r_3 * d_t_0) + (v_c_3 + 1u))];
        p_out[v_i_0] = v_stored_0_3;
        p_out[v_i_1] = v_stored_1_3;
        p_out[v_i_2] = v_stored_2_3;
        p_out[v_i_3] = v_stored_3_3;
    } else {
        if (v_live_0) {
            v_i_0 = p_absolute_pos_0;
            v_r_0 = cj_floordiv_u32(v_i_0, s_t_1);
            v_c_0 = cj_mod_u32(v_i_0, s_t_1);
            p_out[v_i_0] = p_t[((v_r_0 * d_t_0) + (v_c_0 + 1u))];
        }
        if (v_live_1) {
            v_i_1 = p_absolute_pos_1;
            v_r_1 = cj_floordiv_u32(v_i_1, s_t_1);
            v_c_1 = cj_mod_u32(v_i_1, s_t_1);
            p_out[v_i_1] = p_t[((v_r_1 * d_t_0) + (v_c_1 + 1u))];
        }
        if (v_live_2) {
            v_i_2 = p_absolute_pos_2;
            v_r_2 = cj_floordiv_u32(v_i_2, s_t_1);
            v_c_2 = cj_mod_u32(v_i_2, s_t_1);
            p_out[v_i_2] = p_t[((v_r_2 * d_t_0) + (v_c_2 + 1u))];
        }
        if (v_live_3) {
            v_i_3 = p_absolute_pos_3;
            v_r_3 = cj_floordiv_u32(v_i_3, s_t_1);
            v_c_3 = cj_mod_u32(v_i_3, s_t_1);
            p_out[v_i_3] = p_t[((v_r_3 * d_t_0) + (v_c_3 + 1u))];
        }
    }
}
