/* The -shape and -data_shape flags of bench and compile, in
 * benchmark_app's syntax:
 *
 *   [1,3,224,224]                 every input
 *   data[1,3,224,224],mask[1,?]   per input; '?' (or -1) keeps a dim dynamic
 *
 * Dim ranges (1..10) are refused: runnel's shapes have no bounds. */
#ifndef RUNNEL_TOOLS_BENCH_SHAPE_H
#define RUNNEL_TOOLS_BENCH_SHAPE_H

#include <stddef.h>

#include "runnel/runnel.h"

#define BENCH_SHAPE_MAX 64

/* The most model inputs the tools reshape or name in messages. */
#define BENCH_SHAPE_MAX_INPUTS 256

typedef struct bench_shape_entry {
    char name[256]; /* "" applies to every input */
    rn_partial_shape shape;
} bench_shape_entry;

typedef struct bench_shape_list {
    size_t n;
    bench_shape_entry entries[BENCH_SHAPE_MAX];
} bench_shape_list;

/* Parses `text` given to `flag` ("-shape") into *out. A malformed text is
 * RN_INVALID_ARG with a message naming the flag, the text and the problem;
 * *out is then empty. */
rn_status bench_shape_parse(const char *flag, const char *text, bench_shape_list *out);

/* The shape given for input `name`: its own entry, else the unnamed one,
 * else NULL. */
const rn_partial_shape *bench_shape_find(const bench_shape_list *list, const char *name);

/* The name of an entry that names no input in `names` (n of them), or
 * NULL when every named entry matches an input. */
const char *bench_shape_unknown_name(const bench_shape_list *list, const char *const *names,
                                     size_t n);

/* Writes "[1,3,?,?]" ("[...]" for an unknown rank) into buf. */
void bench_shape_format(const rn_partial_shape *shape, char *buf, size_t size);

/* True when the shape has a known rank and no dynamic dim. */
int bench_shape_is_static(const rn_partial_shape *shape);

#endif /* RUNNEL_TOOLS_BENCH_SHAPE_H */
