/* Temporary buffers of REF kernels.
 *
 * A kernel's per-run buffers (im2col columns, packed GEMM panels, f64
 * copies of an input) come from a per-thread cache of freed blocks: a block
 * freed by ref_tmp_free goes back to its thread's cache and the next
 * request of its size class takes it, so that once a model has run, a
 * steady-state run never reaches malloc. Blocks are 64-byte aligned and
 * sized in powers of two; a thread keeps at most REF_TMP_KEEP_BYTES cached
 * (beyond that, frees are real) and releases its cache when it exits.
 * Memory from ref_tmp_* must be freed with ref_tmp_free (on any thread).
 * Under ASan or TSan the calls are plain malloc and free, so that the
 * sanitizer sees every block. */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_TMP_H
#define RUNNEL_PLUGINS_REF_KERNELS_TMP_H

#include <stddef.h>

#define REF_TMP_KEEP_BYTES ((size_t)512 << 20)

/* A block of at least `bytes` (NULL when out of memory). */
void *ref_tmp_alloc(size_t bytes);
/* As ref_tmp_alloc for n * size bytes (checked), zero-filled. */
void *ref_tmp_calloc(size_t n, size_t size);
/* Returns a block to this thread's cache. NULL is a no-op. */
void ref_tmp_free(void *p);

#endif /* RUNNEL_PLUGINS_REF_KERNELS_TMP_H */
