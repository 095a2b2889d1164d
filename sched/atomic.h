/*
 * sched/atomic.h — the one place where runnel's scheduler touches atomics.
 *
 * Two backends with one API:
 *
 *   - ck_pr (default): concurrencykit's ck_pr loads, stores, read-modify-writes and fences.
 *     The memory orders are mapped with the "trailing fence" convention: every seq_cst store
 *     and read-modify-write is followed by a full fence (on x86 the locked instruction itself
 *     is the fence), so a seq_cst load needs no fence of its own. On x86 (TSO) the acquire and
 *     release orders cost nothing beyond a compiler barrier, a seq_cst store is one `xchg`.
 *   - C11 (`-DRN_ATOMIC_C11`): <stdatomic.h> with the same explicit orders and no standalone
 *     fences. ThreadSanitizer sees neither ck's inline assembly nor standalone fences, so the
 *     tsan build (`--config=tsan`) selects this backend.
 *
 * Rules for callers: every shared variable that is accessed concurrently is one of the
 * sched_atomic_* types below and is only accessed through these functions; a StoreLoad
 * ordering is expressed as a seq_cst store (or RMW) followed by a seq_cst load, never as a
 * fence, so that both backends and ThreadSanitizer agree on what is ordered.
 *
 * All functions are static inline; the order argument is a compile-time constant at every
 * call site, so the switch on it folds away.
 */
#ifndef RN_SCHED_ATOMIC_H
#define RN_SCHED_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

/* Memory orders, the same names and meaning as C11's memory_order_*. */
typedef enum sched_order {
    SCHED_RELAXED,
    SCHED_ACQUIRE,
    SCHED_RELEASE,
    SCHED_ACQ_REL,
    SCHED_SEQ_CST,
} sched_order;

/* The size of a cache line: keeps hot atomics written by different threads apart. */
#define SCHED_CACHE_LINE    64
#define SCHED_CACHE_ALIGNED _Alignas(SCHED_CACHE_LINE)

#if defined(RN_ATOMIC_C11)

/* ---------------------------------------------------------------- C11 backend */
#include <stdatomic.h>

#define SCHED_ATOMIC_BACKEND "c11"

typedef struct sched_atomic_u32 {
    _Atomic uint32_t v;
} sched_atomic_u32;
typedef struct sched_atomic_u64 {
    _Atomic uint64_t v;
} sched_atomic_u64;
typedef struct sched_atomic_ptr {
    _Atomic(void *) v;
} sched_atomic_ptr;

static inline memory_order sched_atomic_c11_order_(sched_order o)
{
    switch (o) {
    case SCHED_RELAXED:
        return memory_order_relaxed;
    case SCHED_ACQUIRE:
        return memory_order_acquire;
    case SCHED_RELEASE:
        return memory_order_release;
    case SCHED_ACQ_REL:
        return memory_order_acq_rel;
    default:
        return memory_order_seq_cst;
    }
}

/* A load may not be release or acq_rel in C11; map those to the nearest legal order. */
static inline memory_order sched_atomic_c11_load_order_(sched_order o)
{
    if (o == SCHED_RELEASE)
        return memory_order_relaxed;
    if (o == SCHED_ACQ_REL)
        return memory_order_acquire;
    return sched_atomic_c11_order_(o);
}

/* A store may not be acquire or acq_rel in C11; map those to the nearest legal order. */
static inline memory_order sched_atomic_c11_store_order_(sched_order o)
{
    if (o == SCHED_ACQUIRE)
        return memory_order_relaxed;
    if (o == SCHED_ACQ_REL)
        return memory_order_release;
    return sched_atomic_c11_order_(o);
}

/* The failure order of a compare-exchange may be neither release nor stronger than success. */
static inline memory_order sched_atomic_c11_fail_order_(sched_order o)
{
    if (o == SCHED_SEQ_CST)
        return memory_order_seq_cst;
    if (o == SCHED_ACQUIRE || o == SCHED_ACQ_REL)
        return memory_order_acquire;
    return memory_order_relaxed;
}

#define SCHED_ATOMIC_C11_DEFINE_(NAME, T, ST)                                                      \
    static inline void sched_atomic_init_##NAME(ST *a, T v)                                        \
    {                                                                                              \
        atomic_init(&a->v, v);                                                                     \
    }                                                                                              \
    static inline T sched_atomic_load_##NAME(const ST *a, sched_order o)                           \
    {                                                                                              \
        return atomic_load_explicit((_Atomic(T) *)&a->v, sched_atomic_c11_load_order_(o));         \
    }                                                                                              \
    static inline void sched_atomic_store_##NAME(ST *a, T v, sched_order o)                        \
    {                                                                                              \
        atomic_store_explicit(&a->v, v, sched_atomic_c11_store_order_(o));                         \
    }                                                                                              \
    static inline T sched_atomic_exchange_##NAME(ST *a, T v, sched_order o)                        \
    {                                                                                              \
        return atomic_exchange_explicit(&a->v, v, sched_atomic_c11_order_(o));                     \
    }                                                                                              \
    static inline bool sched_atomic_cas_##NAME(ST *a, T *expected, T desired, sched_order o)       \
    {                                                                                              \
        return atomic_compare_exchange_strong_explicit(&a->v, expected, desired,                   \
                                                       sched_atomic_c11_order_(o),                 \
                                                       sched_atomic_c11_fail_order_(o));           \
    }

#define SCHED_ATOMIC_C11_DEFINE_ARITH_(NAME, T, ST)                                                \
    static inline T sched_atomic_fetch_add_##NAME(ST *a, T v, sched_order o)                       \
    {                                                                                              \
        return atomic_fetch_add_explicit(&a->v, v, sched_atomic_c11_order_(o));                    \
    }                                                                                              \
    static inline T sched_atomic_fetch_sub_##NAME(ST *a, T v, sched_order o)                       \
    {                                                                                              \
        return atomic_fetch_sub_explicit(&a->v, v, sched_atomic_c11_order_(o));                    \
    }                                                                                              \
    static inline T sched_atomic_fetch_or_##NAME(ST *a, T v, sched_order o)                        \
    {                                                                                              \
        return atomic_fetch_or_explicit(&a->v, v, sched_atomic_c11_order_(o));                     \
    }                                                                                              \
    static inline T sched_atomic_fetch_and_##NAME(ST *a, T v, sched_order o)                       \
    {                                                                                              \
        return atomic_fetch_and_explicit(&a->v, v, sched_atomic_c11_order_(o));                    \
    }

SCHED_ATOMIC_C11_DEFINE_(u32, uint32_t, sched_atomic_u32)
SCHED_ATOMIC_C11_DEFINE_(u64, uint64_t, sched_atomic_u64)
SCHED_ATOMIC_C11_DEFINE_(ptr, void *, sched_atomic_ptr)
SCHED_ATOMIC_C11_DEFINE_ARITH_(u32, uint32_t, sched_atomic_u32)
SCHED_ATOMIC_C11_DEFINE_ARITH_(u64, uint64_t, sched_atomic_u64)

/* A hint to the CPU that this thread is spinning; not an atomic and orders nothing. */
static inline void sched_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#else /* !RN_ATOMIC_C11 */

/* ---------------------------------------------------------------- ck_pr backend */
#include <ck_pr.h>

#define SCHED_ATOMIC_BACKEND "ck_pr"

typedef struct sched_atomic_u32 {
    uint32_t v;
} sched_atomic_u32;
typedef struct sched_atomic_u64 {
    uint64_t v;
} sched_atomic_u64;
typedef struct sched_atomic_ptr {
    void *v;
} sched_atomic_ptr;

/* Fences before a store or read-modify-write of order o (nothing but a compiler barrier on
 * x86, where stores are never reordered with earlier loads or stores). */
static inline void sched_atomic_ck_leading_(sched_order o)
{
    if (o == SCHED_RELEASE || o == SCHED_ACQ_REL || o == SCHED_SEQ_CST) {
        ck_pr_fence_release();
        ck_pr_fence_store_atomic();
        ck_pr_fence_load_atomic();
    } else {
        ck_pr_barrier();
    }
}

/* Fences after a read-modify-write of order o: locked instructions are full barriers on x86,
 * so these only emit code on weaker memory models. */
static inline void sched_atomic_ck_trailing_rmw_(sched_order o)
{
    if (o == SCHED_ACQUIRE || o == SCHED_ACQ_REL || o == SCHED_SEQ_CST) {
        ck_pr_fence_atomic_load();
        ck_pr_fence_atomic_store();
        ck_pr_fence_atomic();
    } else {
        ck_pr_barrier();
    }
}

/* Fences after a load of order o. A seq_cst load needs no leading fence because every seq_cst
 * store and RMW is followed by a full fence (the trailing-fence convention). */
static inline void sched_atomic_ck_trailing_load_(sched_order o)
{
    if (o != SCHED_RELAXED)
        ck_pr_fence_acquire();
    else
        ck_pr_barrier();
}

/* NAME: suffix, T: value type, ST: struct type, CK: ck_pr width suffix. */
#define SCHED_ATOMIC_CK_DEFINE_(NAME, T, ST, CK)                                                   \
    static inline void sched_atomic_init_##NAME(ST *a, T v)                                        \
    {                                                                                              \
        a->v = v;                                                                                  \
    }                                                                                              \
    static inline T sched_atomic_load_##NAME(const ST *a, sched_order o)                           \
    {                                                                                              \
        T r = (T)ck_pr_load_##CK(&a->v);                                                           \
        sched_atomic_ck_trailing_load_(o);                                                         \
        return r;                                                                                  \
    }                                                                                              \
    static inline T sched_atomic_exchange_##NAME(ST *a, T v, sched_order o)                        \
    {                                                                                              \
        sched_atomic_ck_leading_(o);                                                               \
        T r = (T)ck_pr_fas_##CK(&a->v, v);                                                         \
        sched_atomic_ck_trailing_rmw_(o);                                                          \
        return r;                                                                                  \
    }                                                                                              \
    static inline void sched_atomic_store_##NAME(ST *a, T v, sched_order o)                        \
    {                                                                                              \
        if (o == SCHED_SEQ_CST) {                                                                  \
            /* store + StoreLoad in one locked instruction (xchg, ~7 ns; mfence costs ~17) */      \
            (void)sched_atomic_exchange_##NAME(a, v, o);                                           \
            return;                                                                                \
        }                                                                                          \
        sched_atomic_ck_leading_(o);                                                               \
        ck_pr_store_##CK(&a->v, v);                                                                \
    }                                                                                              \
    static inline bool sched_atomic_cas_##NAME(ST *a, T *expected, T desired, sched_order o)       \
    {                                                                                              \
        sched_atomic_ck_leading_(o);                                                               \
        bool ok = ck_pr_cas_##CK##_value(&a->v, *expected, desired, expected);                     \
        sched_atomic_ck_trailing_rmw_(o);                                                          \
        return ok;                                                                                 \
    }

#define SCHED_ATOMIC_CK_DEFINE_ARITH_(NAME, T, ST, CK)                                             \
    static inline T sched_atomic_fetch_add_##NAME(ST *a, T v, sched_order o)                       \
    {                                                                                              \
        sched_atomic_ck_leading_(o);                                                               \
        T r = ck_pr_faa_##CK(&a->v, v);                                                            \
        sched_atomic_ck_trailing_rmw_(o);                                                          \
        return r;                                                                                  \
    }                                                                                              \
    static inline T sched_atomic_fetch_sub_##NAME(ST *a, T v, sched_order o)                       \
    {                                                                                              \
        return sched_atomic_fetch_add_##NAME(a, (T)(0 - v), o);                                    \
    }                                                                                              \
    static inline T sched_atomic_fetch_or_##NAME(ST *a, T v, sched_order o)                        \
    {                                                                                              \
        T old = sched_atomic_load_##NAME(a, SCHED_RELAXED);                                        \
        while (!sched_atomic_cas_##NAME(a, &old, old | v, o)) {                                    \
        }                                                                                          \
        return old;                                                                                \
    }                                                                                              \
    static inline T sched_atomic_fetch_and_##NAME(ST *a, T v, sched_order o)                       \
    {                                                                                              \
        T old = sched_atomic_load_##NAME(a, SCHED_RELAXED);                                        \
        while (!sched_atomic_cas_##NAME(a, &old, old & v, o)) {                                    \
        }                                                                                          \
        return old;                                                                                \
    }

SCHED_ATOMIC_CK_DEFINE_(u32, uint32_t, sched_atomic_u32, 32)
SCHED_ATOMIC_CK_DEFINE_(u64, uint64_t, sched_atomic_u64, 64)
SCHED_ATOMIC_CK_DEFINE_(ptr, void *, sched_atomic_ptr, ptr)
SCHED_ATOMIC_CK_DEFINE_ARITH_(u32, uint32_t, sched_atomic_u32, 32)
SCHED_ATOMIC_CK_DEFINE_ARITH_(u64, uint64_t, sched_atomic_u64, 64)

/* A hint to the CPU that this thread is spinning; not an atomic and orders nothing. */
static inline void sched_cpu_relax(void)
{
    ck_pr_stall();
}

#endif /* RN_ATOMIC_C11 */

#endif /* RN_SCHED_ATOMIC_H */
