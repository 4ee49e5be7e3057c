#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define CJ_ALIGN 64
#define CJ_DIM_X 256u
#define CJ_DIM_Y 1u
#define CJ_DIM_Z 1u

static inline uint64_t cj_slot(const unsigned char *args, size_t offset) {
    uint64_t value;
    memcpy(&value, args + offset, sizeof value);
    return value;
}

static inline __attribute__((always_inline)) void cj_unit(
        float p_a,
        float *p_x,
        uint32_t n_x,
        float *p_y,
        uint32_t n_y,
        float *p_out,
        uint32_t n_out,
        uint32_t cj_p, uint32_t cj_first, uint32_t cj_cube_x, uint32_t cj_cube_y, uint32_t cj_cube_z, uint32_t cj_count_x, uint32_t cj_count_y, uint32_t cj_count_z, uint32_t cj_unit_y, uint32_t cj_unit_z) {
    const uint32_t pos_absolute_pos = cj_p;
    uint32_t v_i = 0u;
    v_i = pos_absolute_pos;
    p_out[v_i] = ((p_a * p_x[v_i]) + p_y[v_i]);
}

void cubejit_launch(const unsigned char *cj_args) {
    uint32_t cj_count_x = (uint32_t)cj_slot(cj_args, 0);
    uint32_t cj_count_y = (uint32_t)cj_slot(cj_args, 8);
    uint32_t cj_count_z = (uint32_t)cj_slot(cj_args, 16);
    float p_a;
    memcpy(&p_a, cj_args + 24, sizeof p_a);
    float *p_x = (float *)__builtin_assume_aligned((void *)(uintptr_t)cj_slot(cj_args, 32), CJ_ALIGN);
    uint32_t n_x = (uint32_t)cj_slot(cj_args, 40);
    float *p_y = (float *)__builtin_assume_aligned((void *)(uintptr_t)cj_slot(cj_args, 48), CJ_ALIGN);
    uint32_t n_y = (uint32_t)cj_slot(cj_args, 56);
    float *p_out = (float *)__builtin_assume_aligned((void *)(uintptr_t)cj_slot(cj_args, 64), CJ_ALIGN);
    uint32_t n_out = (uint32_t)cj_slot(cj_args, 72);
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
                    cj_unit(p_a, p_x, n_x, p_y, n_y, p_out, n_out, cj_p, cj_first, cj_cube_x, cj_cube_y, cj_cube_z, cj_count_x, cj_count_y, cj_count_z, cj_unit_y, cj_unit_z);
                }
            }
        }
    }
}
