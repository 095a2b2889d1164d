/* Assertions the NVIDIA tests share. */
#ifndef RUNNEL_TESTS_NVIDIA_SAME_PROGRAM_H
#define RUNNEL_TESTS_NVIDIA_SAME_PROGRAM_H

#include "plugins/nvidia/nvidia.h"

/* Asserts (Criterion) that `b`, lowered in bf16, is `h`, the same graph
 * lowered in f16, step for step: the same steps with the same operands and
 * attributes (fusions, GEMMs, attention, layouts), the same values placed
 * at the same offsets, with bf16 wherever h has f16. `what` names the
 * model in messages. */
void nv_test_assert_bf16_as_f16(const nv_program *h, const nv_program *b, const char *what);

#endif /* RUNNEL_TESTS_NVIDIA_SAME_PROGRAM_H */
