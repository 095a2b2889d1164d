/* Assertions the NVIDIA tests share. */
#ifndef RUNNEL_TESTS_NVIDIA_SAME_PROGRAM_H
#define RUNNEL_TESTS_NVIDIA_SAME_PROGRAM_H

#include <stddef.h>

#include "plugins/nvidia/nvidia.h"

/* Asserts (Criterion) that `b`, lowered in bf16, is `h`, the same graph
 * lowered in f16, step for step: the same steps with the same operands and
 * attributes (fusions, GEMMs, attention, layouts), the same values placed
 * at the same offsets, with bf16 wherever h has f16. `what` names the
 * model in messages. */
void nv_test_assert_bf16_as_f16(const nv_program *h, const nv_program *b, const char *what);

/* Asserts (Criterion) that the NVIDIA-own YES/NO property `key`, stored at
 * byte `offset` of nv_properties (offsetof(nv_properties, own.FIELD)), is
 * off by default, reads and parses YES and NO, and that a bad value `bad`
 * is refused naming the key with nothing of the same call applied (a good
 * NVIDIA_ALLOW_TF32 before it included). */
void nv_test_assert_own_bool(const char *key, size_t offset, const char *bad);

/* The onnx wheel's light model `name` as read (light_NAME.onnx under
 * .cache/onnx-1.22.0, from the workspace or one folder below); skips the
 * test (Criterion), saying so, when it is missing. */
graph *nv_test_light(const char *name);

#endif /* RUNNEL_TESTS_NVIDIA_SAME_PROGRAM_H */
