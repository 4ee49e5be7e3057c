#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define CJ_ALIGN 64
#define CJ_DIM_X 64u
#define CJ_DIM_Y 1u
#define CJ_DIM_Z 1u

static inline uint64_t cj_slot(const unsigned char *args, size_t offset) {
    uint64_t value;
    memcpy(&value, args + offset, sizeof value);
    return value;
}

static inline uint32_t cj_floordiv_u32(uint32_t a, uint32_t b) {
    return b == 0 ? 0 : a / b;
}

static inline uint32_t cj_mod_u32(uint32_t a, uint32_t b) {
    return b == 0 ? 0 : a % b;
}

static inline __attribute__((always_inline)) void cj_unit(
        float *p_t,
        uint32_t n_t,
        uint32_t s_t_0,
        uint32_t s_t_1,
        uint32_t d_t_0,
        uint32_t d_t_1,
        float *p_out,
        uint32_t n_out,
        uint32_t cj_p, uint32_t cj_first, uint32_t cj_cube_x, uint32_t cj_cube_y, uint32_t cj_cube_z, uint32_t cj_count_x, uint32_t cj_count_y, uint32_t cj_count_z, uint32_t cj_unit_y, uint32_t cj_unit_z) {
    const uint32_t pos_absolute_pos = cj_p;
    uint32_t v_i = 0u;
    uint32_t v_r = 0u;
    uint32_t v_c = 0u;
    v_i = pos_absolute_pos;
    v_r = cj_floordiv_u32(v_i, s_t_1);
    v_c = cj_mod_u32(v_i, s_t_1);
    p_out[v_i] = p_t[((((uint64_t)(v_r)) * d_t_0) + ((uint64_t)((v_c + 1u))))];
}

void cubejit_launch(const unsigned char *cj_args) {
    uint32_t cj_count_x = (uint32_t)cj_slot(cj_args, 0);
    uint32_t cj_count_y = (uint32_t)cj_slot(cj_args, 8);
    uint32_t cj_count_z = (uint32_t)cj_slot(cj_args, 16);
    float *p_t = (float *)__builtin_assume_aligned((void *)(uintptr_t)cj_slot(cj_args, 24), CJ_ALIGN);
    uint32_t s_t_0 = (uint32_t)cj_slot(cj_args, 40);
    uint32_t s_t_1 = (uint32_t)cj_slot(cj_args, 48);
    uint32_t d_t_0 = (uint32_t)cj_slot(cj_args, 56);
    uint32_t d_t_1 = (uint32_t)cj_slot(cj_args, 64);
    uint32_t n_t = s_t_0 * s_t_1;
    float *p_out = (float *)__builtin_assume_aligned((void *)(uintptr_t)cj_slot(cj_args, 72), CJ_ALIGN);
    uint32_t n_out = (uint32_t)cj_slot(cj_args, 80);
    const uint32_t cj_bound = n_out;
    const int64_t cj_cubes = (int64_t)cj_count_x * cj_count_y * cj_count_z;
    const int64_t cj_chunk = cj_cubes / (16 * omp_get_max_threads()) + 1;
    #pragma omp parallel for schedule(dynamic, cj_chunk) if(cj_cubes > 1)
    for (int64_t cj_c = 0; cj_c < cj_cubes; ++cj_c) {
        const uint32_t cj_cube_x = (uint32_t)(cj_c % cj_count_x);
        const uint32_t cj_cube_y = (uint32_t)((cj_c / cj_count_x) % cj_count_y);
        const uint32_t cj_cube_z = (uint32_t)(cj_c / ((int64_t)cj_count_x * cj_count_y));
        for (uint32_t cj_unit_z = 0; cj_unit_z < CJ_DIM_Z; ++cj_unit_z) {
            for (uint32_t cj_unit_y = 0; cj_unit_y < CJ_DIM_Y; ++cj_unit_y) {
                const uint32_t cj_first = (((cj_cube_x * CJ_DIM_X) + 0u) + (((cj_cube_y * CJ_DIM_Y) + cj_unit_y) * (cj_count_x * CJ_DIM_X)) + (((cj_cube_z * CJ_DIM_Z) + cj_unit_z) * (cj_count_x * CJ_DIM_X) * (cj_count_y * CJ_DIM_Y)));
                uint32_t cj_end = cj_first + CJ_DIM_X;
                if (cj_bound < cj_end) cj_end = cj_bound;
                for (uint32_t cj_p = cj_first; cj_p < cj_end; ++cj_p) {
                    cj_unit(p_t, n_t, s_t_0, s_t_1, d_t_0, d_t_1, p_out, n_out, cj_p, cj_first, cj_cube_x, cj_cube_y, cj_cube_z, cj_count_x, cj_count_y, cj_count_z, cj_unit_y, cj_unit_z);
                }
            }
        }
    }
}
