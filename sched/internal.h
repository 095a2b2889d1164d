/*
 * sched/internal.h — the scheduler's private structures and the functions its source files
 * share (private to sched/; prefix sched_i_ for non-static internal functions).
 */
#ifndef RN_SCHED_INTERNAL_H
#define RN_SCHED_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/atomic.h"
#include "sched/deque.h"
#include "sched/ec.h"
#include "sched/inject.h"
#include "sched/sched.h"

#define SCHED_NONE UINT32_MAX

/* ------------------------------------------------------------------ work items
 * A sched_item's `p` is a pointer (8-byte aligned) with the item kind in its low two bits:
 *   NODE   p = instance | 1, x = node index                 run the node
 *   RANGE  p = instance | 2, x = lo << 32 | hi              release the DAG edges [lo, hi)
 *   TASK   p = task record | 3, x = 0 or SCHED_TASK_OWNED   a one-off task (sched_submit,
 *                                                           sched_post)
 * Releasing a range of edges is itself work: a node with thousands of successors splits it in
 * halves that thieves take, instead of pushing thousands of items into a bounded deque. */
enum {
    SCHED_ITEM_NODE = 1,
    SCHED_ITEM_RANGE = 2,
    SCHED_ITEM_TASK = 3,
    SCHED_ITEM_KIND_MASK = 3,
};

/* A one-off task: from sched_submit (x = 0: freed by the thread that runs it) or sched_post
 * (x = SCHED_TASK_OWNED: its caller's). */
typedef sched_job sched_task_rec;
#define SCHED_TASK_OWNED 1u

/* ------------------------------------------------------------------ DAG */

/* A node as the hot path reads it: one 32-byte record. */
typedef struct sched_dag_node {
    sched_task_fn fn;
    void *arg;
    uint32_t succ_begin; /* successors: succ[succ_begin .. succ_end) */
    uint32_t succ_end;
    uint32_t pred;     /* number of predecessors (edges in) */
    uint32_t executor; /* SCHED_EXECUTOR_STREAM or an executor id */
} sched_dag_node;

struct sched_dag {
    uint32_t n_nodes;
    uint32_t n_edges;
    uint32_t n_sinks; /* nodes without successors: the run completes when all have run */
    uint32_t n_multi; /* nodes with two or more predecessors (they need a join counter) */
    uint32_t max_executor;
    sched_dag_node *nodes; /* n_nodes + 1 entries: the last is a virtual root whose
                              successors are the sources (nodes without predecessors) */
    uint32_t *succ;        /* n_edges + number of sources entries */
    uint32_t *multi;       /* the n_multi nodes with pred >= 2 */
    const char **names;    /* n_nodes names, pointing into name_blob */
    char *name_blob;
};

/* ------------------------------------------------------------------ instance */

/* Instance phase word: the state in the low bits, a waiter flag above. */
enum {
    SCHED_PHASE_IDLE = 0,
    SCHED_PHASE_RUNNING = 1,
    SCHED_PHASE_DONE = 2,
    SCHED_PHASE_STATE_MASK = 3,
    SCHED_PHASE_WAITERS = 4,
};

/* Two cache lines: what every task reads (written only at start, or once on failure), and
 * what changes while the run ends. A small DAG submitted from outside then costs few cache
 * line transfers between the submitting thread and the workers. */
struct sched_instance {
    SCHED_CACHE_ALIGNED const sched_dag *dag;
    void *user_arg;
    uint64_t id;
    sched *s;
    uint32_t stream;
    uint32_t run;
    sched_done_fn cb;
    void *cb_arg;
    sched_atomic_u32 *join;  /* per node: predecessors not yet completed (pred >= 2 only) */
    sched_atomic_u32 status; /* SCHED_OK until the first error or a cancel (stored as u32) */
    SCHED_CACHE_ALIGNED sched_atomic_u32 phase; /* SCHED_PHASE_*; futex word of waiters */
    sched_atomic_u32 sinks_left;                /* sinks not yet run in this run */
};

/* ------------------------------------------------------------------ tracing */

typedef struct sched_trace_event {
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t instance; /* 0 for one-off tasks */
    uint32_t node;
    uint32_t run;
    uint32_t stream;
    char name[44];
} sched_trace_event;

#define SCHED_TRACE_BLOCK_EVENTS 512

typedef struct sched_trace_block {
    sched_atomic_ptr next;  /* the following block, published with release */
    sched_atomic_u32 count; /* events published in this block */
    sched_trace_event ev[SCHED_TRACE_BLOCK_EVENTS];
} sched_trace_block;

/* One thread's trace: only that thread appends; any thread may read what is published. */
typedef struct sched_trace_buf {
    sched_trace_block *head;
    sched_trace_block *tail;
    uint32_t pid; /* trace process: the stream, or n_streams + executor id - 1 */
    uint32_t tid; /* trace thread: the worker id */
} sched_trace_buf;

/* ------------------------------------------------------------------ threads */

typedef struct sched_worker sched_worker;
typedef struct sched_executor sched_executor;

/* Whatever thread runs tasks: a stream worker, an executor thread, or (for
 * sched_instance_complete_node from outside) a stack-allocated stand-in. */
typedef struct sched_runner {
    sched *s;
    sched_worker *worker;   /* non-NULL for stream workers */
    sched_executor *exec;   /* non-NULL for executor threads */
    uint32_t id;            /* ctx->worker */
    uint32_t stream;        /* the worker's stream (SCHED_NONE otherwise) */
    sched_trace_buf *trace; /* NULL when tracing is off or for stand-ins */
} sched_runner;

struct sched_worker {
    sched_deque deque;                       /* top and bottom sit on their own cache lines */
    SCHED_CACHE_ALIGNED sched_ec ec;         /* parks here */
    sched_atomic_u32 foreign;                /* set by a waker from another stream */
    SCHED_CACHE_ALIGNED sched_runner runner; /* owner-private from here on */
    uint32_t local;                          /* index within its stream */
    uint32_t tick;                           /* items run, for the periodic injection check */
    bool searching;                          /* counted in its stream's `searching` */
    bool spinner;                            /* holds one of its stream's spinner slots */
    uint64_t idle_since_ns;
    uint64_t rng;
    pthread_t thread;
    bool started;
    sched_trace_buf trace;
};

/* An overflow node: work that found both the deque and the injection queue full. */
typedef struct sched_overflow {
    struct sched_overflow *next;
    sched_item item;
} sched_overflow;

typedef struct sched_stream {
    sched_inject inject;
    SCHED_CACHE_ALIGNED sched_atomic_u32 searching; /* workers spinning for work (or claimed
                                                       for a wake-up on their behalf) */
    sched_atomic_u32 spinners; /* searching workers allowed to spin the full spin_us: at most
                                  half the stream's workers (at least one), the others park
                                  after one pass, so idle workers do not crowd the CPUs */
    uint32_t max_spinners;
    SCHED_CACHE_ALIGNED sched_atomic_u64 *sleepers; /* bit per worker announced to sleep */
    uint32_t n_sleeper_words;
    uint32_t index;
    uint32_t first_worker;
    uint32_t n_workers;
    /* Rare path: unbounded spill list under a mutex, with an atomic count for a cheap check. */
    SCHED_CACHE_ALIGNED sched_atomic_u32 overflow_count;
    pthread_mutex_t overflow_lock;
    sched_overflow *overflow_head;
    sched_overflow *overflow_tail;
} sched_stream;

typedef struct sched_exec_thread {
    sched_executor *exec;
    sched_runner runner;
    sched_trace_buf trace;
    pthread_t thread;
} sched_exec_thread;

struct sched_executor {
    sched *s;
    char name[32];
    uint32_t id;
    uint32_t n_threads;
    sched_exec_thread *threads;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    sched_item *ring; /* FIFO of items, grown under the lock */
    size_t cap;
    size_t head;
    size_t count;
    bool stop;
};

struct sched {
    sched_config cfg;
    uint32_t n_streams;
    uint32_t n_workers;
    sched_stream *streams;
    sched_worker *workers;
    uint64_t t0_ns; /* trace time origin */
    SCHED_CACHE_ALIGNED sched_atomic_u32 shutdown;
    sched_atomic_u32 rr_stream;
    SCHED_CACHE_ALIGNED sched_atomic_u32 n_executors;
    sched_executor *executors[SCHED_MAX_EXECUTORS + 1]; /* index = id; [0] unused */
    uint32_t n_exec_threads;                            /* under exec_lock */
    pthread_mutex_t exec_lock;
};

/* The runner of the calling thread, or NULL outside the scheduler's threads. */
sched_runner *sched_i_current_runner(void);
void sched_i_set_current_runner(sched_runner *r);

/* scheduler.c: resolves SCHED_STREAM_ANY or checks a stream index. Returns 0 or -EINVAL. */
int sched_i_choose_stream(sched *s, int stream, uint32_t *out);

/* worker.c: the work loop, and running items on any runner. */
void *sched_i_worker_main(void *arg);
/* Names a started worker's thread ("rn-s0w1"); its creator calls it right
 * after pthread_create, so no worker is seen under the process's name once
 * sched_create returns. */
void sched_i_worker_name(const sched_worker *w);
void sched_i_run_item(sched_runner *r, sched_item it);
/* Releases node `node`'s successors after it completed (or the sink count); the ready
 * successors are queued. Used by sched_instance_complete_node; runs no continuation. */
void sched_i_finish_node(sched_runner *r, sched_instance *inst, uint32_t node);
/* Queues `it`, bound to `stream`, from runner r (NULL: an outside thread). `external` items
 * may fail with false when the injection queue is full; internal ones never fail. */
bool sched_i_push(sched *s, sched_runner *r, uint32_t stream, sched_item it, bool external);
/* Wakes every worker so that they see `shutdown`. */
void sched_i_wake_all(sched *s);
/* trace.c: initializes / frees one thread's trace buffer (head is NULL when out of memory). */
void sched_i_trace_init(sched_trace_buf *t, uint32_t pid, uint32_t tid);
void sched_i_trace_fini(sched_trace_buf *t);
/* Owner thread only: fills the next event of `t` and stamps its start; the event is published
 * by sched_i_trace_end after the task. NULL (nothing recorded) when out of memory. */
sched_trace_event *sched_i_trace_begin(sched_trace_buf *t, const char *name, uint64_t instance,
                                       uint32_t run, uint32_t node, uint32_t stream);
void sched_i_trace_end(sched_trace_buf *t, sched_trace_event *e);

/* executor.c */
void sched_i_executor_push(sched_executor *e, sched_item it);
void sched_i_executors_stop(sched *s);

/* instance.c */
void sched_i_instance_complete(sched_instance *inst);
static inline void sched_i_instance_fail(sched_instance *inst, int status)
{
    uint32_t ok = SCHED_OK;
    (void)sched_atomic_cas_u32(&inst->status, &ok, (uint32_t)status, SCHED_ACQ_REL);
}

#endif /* RN_SCHED_INTERNAL_H */
