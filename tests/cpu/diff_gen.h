/* Generated models for the differential test of the CPU device against REF
 * (tests/cpu/test_cpu_diff.c): one family per op (or pattern) the CPU
 * device runs as a oneDNN primitive or fuses, each case drawn from a seed:
 * shapes (size-1 and empty dims, odd channel counts), axes (last and
 * negative), attributes, element types, and the context the op sits in:
 *
 *   static   model inputs of static shapes (one run);
 *   dynamic  inputs declared with symbolic dims, so the plan is
 *            specialised at run time, run twice with dims that change;
 *   fold     every input an initializer: constant folding evaluates the
 *            op at compile time with the device's kernels;
 *   if_const the op in the then-branch of an If whose condition is a
 *            constant (the transforms inline the branch);
 *   if       the same with the condition a model input (true, then false);
 *   loop     the op in a Loop body (2 or 3 iterations), its f32 inputs
 *            plus the iteration number, the results as scan outputs.
 *
 * The same seed gives the same case on every machine. */
#ifndef RUNNEL_TESTS_CPU_DIFF_GEN_H
#define RUNNEL_TESTS_CPU_DIFF_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "runnel/runnel.h"
#include "tests/cpu/diff_model.h"

typedef enum dg_context {
    DG_STATIC,
    DG_DYNAMIC,
    DG_FOLD,
    DG_IF_CONST,
    DG_IF,
    DG_LOOP,
    DG_CONTEXT_COUNT,
} dg_context;

const char *dg_context_name(dg_context c);

#define DG_MAX_INPUTS 12
#define DG_MAX_RUNS   2
#define DG_MAX_RANK   8

/* A model input and the shape it is fed with in each run. */
typedef struct dg_input {
    const char *name; /* owned by the case's model */
    rn_element_type type;
    int rank;
    int64_t dims[DG_MAX_RUNS][DG_MAX_RANK];
    float lo, hi; /* values drawn uniformly from [lo, hi] (integers for integer types) */
} dg_input;

typedef struct dg_case {
    const char *family;
    uint64_t seed;
    dg_context context;
    dm_model *model;
    int n_inputs;
    dg_input inputs[DG_MAX_INPUTS];
    int n_runs;
    /* The op under test: the runtime model is searched for it (or its
     * fused form) to count the cases that ran it on oneDNN. */
    const char *op;
    /* Integer outputs may differ by this many steps (QuantizeLinear: CPU
     * multiplies by the reciprocal scale, docs/cpu.md). */
    int int_steps;
    /* f32 outputs may differ by this much more: one step of a
     * QuantizeLinear then DequantizeLinear (its scale). */
    float f32_step;
    /* The absolute error the op's conditioning allows in f32 (0: none):
     * LayerNormalization divides x - mean, known to FLT_EPSILON |x|, by
     * sqrt(var + epsilon), which rows of nearly equal values bring down to
     * sqrt(epsilon). */
    float f32_conditioning;
    char desc[1536]; /* op, shapes, attributes, context: what reproduces it */
} dg_case;

typedef struct dg_family {
    const char *name;
    void (*generate)(void *gen); /* builds the op into the context's graph */
} dg_family;

extern const dg_family dg_families[];
extern const int dg_family_count;

/* The family named `name`, or -1. */
int dg_family_find(const char *name);

/* Draws case `seed` of family `family` (context drawn too unless `context`
 * is not DG_CONTEXT_COUNT). */
void dg_case_make(int family, uint64_t seed, dg_context context, dg_case *out);
void dg_case_free(dg_case *c);

#endif /* RUNNEL_TESTS_CPU_DIFF_GEN_H */
