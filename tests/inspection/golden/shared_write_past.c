#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define CJ_ALIGN 64
#define CJ_DIM_X 32u
#define CJ_DIM_Y 1u
#define CJ_DIM_Z 1u
#define CJ_UNITS (CJ_DIM_X * CJ_DIM_Y * CJ_DIM_Z)

static inline uint64_t cj_slot(const unsigned char *args, size_t offset) {
    uint64_t value;
    memcpy(&value, args + offset, sizeof value);
    return value;
}

void cubejit_launch(const unsigned char *cj_args) {
    uint32_t cj_count_x = (uint32_t)cj_slot(cj_args, 0);
    uint32_t cj_count_y = (uint32_t)cj_slot(cj_args, 8);
    uint32_t cj_count_z = (uint32_t)cj_slot(cj_args, 16);
    float *p_x = (float *)__builtin_assume_aligned((void *)(uintptr_t)cj_slot(cj_args, 24), CJ_ALIGN);
    uint32_t n_x = (uint32_t)cj_slot(cj_args, 32);
    float *p_out = (float *)__builtin_assume_aligned((void *)(uintptr_t)cj_slot(cj_args, 40), CJ_ALIGN);
    uint32_t n_out = (uint32_t)cj_slot(cj_args, 48);
    const int64_t cj_cubes = (int64_t)cj_count_x * cj_count_y * cj_count_z;
    const int64_t cj_chunk = cj_cubes / (16 * omp_get_max_threads()) + 1;
    #pragma omp parallel for schedule(dynamic, cj_chunk) if(cj_cubes > 1)
    for (int64_t cj_c = 0; cj_c < cj_cubes; ++cj_c) {
        const uint32_t cj_cube_x = (uint32_t)(cj_c % cj_count_x);
        const uint32_t cj_cube_y = (uint32_t)((cj_c / cj_count_x) % cj_count_y);
        const uint32_t cj_cube_z = (uint32_t)(cj_c / ((int64_t)cj_count_x * cj_count_y));
        float s_shared[32] __attribute__((aligned(64)));
        for (uint32_t cj_unit_z = 0; cj_unit_z < CJ_DIM_Z; ++cj_unit_z) {
            for (uint32_t cj_unit_y = 0; cj_unit_y < CJ_DIM_Y; ++cj_unit_y) {
                for (uint32_t cj_unit_x = 0; cj_unit_x < CJ_DIM_X; ++cj_unit_x) {
                    const uint32_t pos_absolute_pos = (((cj_cube_x * CJ_DIM_X) + cj_unit_x) + (((cj_cube_y * CJ_DIM_Y) + cj_unit_y) * (cj_count_x * CJ_DIM_X)) + (((cj_cube_z * CJ_DIM_Z) + cj_unit_z) * (cj_count_x * CJ_DIM_X) * (cj_count_y * CJ_DIM_Y)));
                    const uint32_t pos_unit_pos = (cj_unit_x + (cj_unit_y * CJ_DIM_X) + (cj_unit_z * CJ_DIM_X * CJ_DIM_Y));
                    uint32_t v_u = 0;
                    v_u = pos_unit_pos;
                    s_shared[(pos_unit_pos + 1u)] = p_x[pos_absolute_pos];
                }
            }
        }
        for (uint32_t cj_unit_z = 0; cj_unit_z < CJ_DIM_Z; ++cj_unit_z) {
            for (uint32_t cj_unit_y = 0; cj_unit_y < CJ_DIM_Y; ++cj_unit_y) {
                for (uint32_t cj_unit_x = 0; cj_unit_x < CJ_DIM_X; ++cj_unit_x) {
                    const uint32_t pos_absolute_pos = (((cj_cube_x * CJ_DIM_X) + cj_unit_x) + (((cj_cube_y * CJ_DIM_Y) + cj_unit_y) * (cj_count_x * CJ_DIM_X)) + (((cj_cube_z * CJ_DIM_Z) + cj_unit_z) * (cj_count_x * CJ_DIM_X) * (cj_count_y * CJ_DIM_Y)));
                    const uint32_t pos_unit_pos = (cj_unit_x + (cj_unit_y * CJ_DIM_X) + (cj_unit_z * CJ_DIM_X * CJ_DIM_Y));
                    p_out[pos_absolute_pos] = s_shared[pos_unit_pos];
                }
            }
        }
    }
}
