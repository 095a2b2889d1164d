/* oneDNN memory objects for the arguments of primitives, made once and
 * reused.
 *
 * A primitive's argument is a memory object: a descriptor and a pointer.
 * Creating one per argument per run costs about a microsecond (an
 * allocation and the descriptor's checks), which adds up to a few percent of
 * a model with many small primitives (DenseNet-121: ~1,400 arguments a
 * run). The descriptor of an argument never changes (it is the
 * primitive's), and the pointer is the same on every run of a request (the
 * plan's arena), so each thread keeps the objects it made, keyed by
 * (primitive, argument, pointer): a request slot's runs on a worker reuse
 * them, and nothing is created after the first run. The table is per thread
 * (no locks) and bounded: a slot taken by another key has its object
 * destroyed and replaced. Objects of a released primitive are never looked
 * up again (ids are not reused) and go when replaced or when the thread
 * exits. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "plugins/cpu/cpu.h"

#define TABLE_SIZE 16384 /* a power of two: 512 KiB a thread */
#define PROBES     4

typedef struct mem_entry {
    uint64_t id; /* 0: empty */
    int arg;
    void *data;
    dnnl_memory_t mem;
} mem_entry;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t table_key;
static bool key_ok;
static _Atomic uint64_t next_id = 1;

static void table_free(void *p)
{
    mem_entry *t = p;
    for (int i = 0; i < TABLE_SIZE; i++)
        if (t[i].id != 0)
            dnnl_memory_destroy(t[i].mem);
    free(t);
}

static void key_init(void)
{
    key_ok = pthread_key_create(&table_key, table_free) == 0;
}

uint64_t cpu_memory_id(void)
{
    return atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
}

static size_t slot_of(uint64_t id, int arg, const void *data)
{
    uint64_t h = id * 0x9e3779b97f4a7c15ull ^ (uint64_t)(unsigned)arg * 0xc2b2ae3d27d4eb4full ^
                 (uint64_t)(uintptr_t)data * 0x165667b19e3779f9ull;
    return (size_t)(h >> 40) & (TABLE_SIZE - 1);
}

dnnl_status_t cpu_memory(uint64_t id, int arg, const cpu_md *md, void *data, dnnl_memory_t *out,
                         bool *owned)
{
    dnnl_engine_t eng = NULL;
    if (cpu_engine(&eng) != RN_OK)
        return dnnl_runtime_error;
    pthread_once(&key_once, key_init);
    mem_entry *t = key_ok ? pthread_getspecific(table_key) : NULL;
    if (t == NULL && key_ok && (t = calloc(TABLE_SIZE, sizeof *t)) != NULL &&
        pthread_setspecific(table_key, t) != 0) {
        free(t);
        t = NULL;
    }
    *owned = t == NULL;
    if (t == NULL) /* no table: a memory object for this run only */
        return cpu_memory_create(out, md, eng, data);
    /* The victim is an empty slot, else one of another primitive: the
     * objects of this primitive's other arguments are in use by this run. */
    size_t base = slot_of(id, arg, data);
    mem_entry *victim = NULL;
    for (int p = 0; p < PROBES; p++) {
        mem_entry *e = &t[(base + (size_t)p) & (TABLE_SIZE - 1)];
        if (e->id == id && e->arg == arg && e->data == data) {
            *out = e->mem;
            return dnnl_success;
        }
        if (e->id == 0 ? victim == NULL || victim->id != 0 : victim == NULL && e->id != id)
            victim = e;
    }
    if (victim == NULL) {
        *owned = true;
        return cpu_memory_create(out, md, eng, data);
    }
    dnnl_memory_t m = NULL;
    dnnl_status_t s = cpu_memory_create(&m, md, eng, data);
    if (s != dnnl_success)
        return s;
    if (victim->id != 0)
        dnnl_memory_destroy(victim->mem);
    *victim = (mem_entry){id, arg, data, m};
    *out = m;
    return dnnl_success;
}
