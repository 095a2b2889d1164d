/*
 * DAG instances: creation, start, completion, waiting, cancellation and deferred nodes.
 *
 * Completion protocol: the thread that runs the last sink calls the callback, then swaps the
 * phase word to DONE and, if a waiter announced itself there, wakes the futex. After the swap
 * it touches nothing of the instance (the futex wake is a system call on the address, harmless
 * if a released waiter has freed it), so a waiter may free or restart the instance as soon as
 * it sees DONE.
 */
#include <stdlib.h>

#include "sched/internal.h"

static sched_atomic_u64 next_instance_id = {1};

int sched_instance_create(const sched_dag *dag, void *user_arg, sched_instance **out)
{
    if (dag == NULL || out == NULL)
        return -EINVAL;
    sched_instance *inst = aligned_alloc(SCHED_CACHE_LINE, sizeof(*inst));
    if (inst == NULL)
        return -ENOMEM;
    *inst = (sched_instance){.dag = dag, .user_arg = user_arg};
    inst->join = malloc(((size_t)dag->n_nodes + 1) * sizeof(*inst->join));
    if (inst->join == NULL) {
        free(inst);
        return -ENOMEM;
    }
    for (uint32_t v = 0; v < dag->n_nodes; v++)
        sched_atomic_init_u32(&inst->join[v], dag->nodes[v].pred);
    inst->id = sched_atomic_fetch_add_u64(&next_instance_id, 1, SCHED_RELAXED);
    sched_atomic_init_u32(&inst->status, SCHED_OK);
    sched_atomic_init_u32(&inst->phase, SCHED_PHASE_IDLE);
    sched_atomic_init_u32(&inst->sinks_left, 0);
    *out = inst;
    return 0;
}

void sched_instance_free(sched_instance *inst)
{
    if (inst == NULL)
        return;
    (void)sched_instance_wait(inst);
    free(inst->join);
    free(inst);
}

void sched_i_instance_complete(sched_instance *inst)
{
    int status = (int)sched_atomic_load_u32(&inst->status, SCHED_ACQUIRE);
    if (inst->cb != NULL)
        inst->cb(inst, status, inst->cb_arg);
    uint32_t old = sched_atomic_exchange_u32(&inst->phase, SCHED_PHASE_DONE, SCHED_ACQ_REL);
    if (old & SCHED_PHASE_WAITERS)
        sched_futex_wake_all(&inst->phase);
}

int sched_instance_start(sched *s, sched_instance *inst, int stream, sched_done_fn cb, void *cb_arg)
{
    if (s == NULL || inst == NULL)
        return -EINVAL;
    const sched_dag *dag = inst->dag;
    uint32_t st;
    if (sched_i_choose_stream(s, stream, &st) != 0 ||
        dag->max_executor > sched_atomic_load_u32(&s->n_executors, SCHED_ACQUIRE))
        return -EINVAL;

    uint32_t old = sched_atomic_load_u32(&inst->phase, SCHED_ACQUIRE);
    do {
        if ((old & SCHED_PHASE_STATE_MASK) == SCHED_PHASE_RUNNING)
            return -EBUSY;
    } while (!sched_atomic_cas_u32(&inst->phase, &old, SCHED_PHASE_RUNNING, SCHED_ACQ_REL));

    /* The instance is ours until the run's first item is published. */
    inst->s = s;
    inst->stream = st;
    inst->cb = cb;
    inst->cb_arg = cb_arg;
    inst->run++;
    sched_atomic_store_u32(&inst->status, SCHED_OK, SCHED_RELAXED);
    sched_atomic_store_u32(&inst->sinks_left, dag->n_sinks, SCHED_RELAXED);
    for (uint32_t i = 0; i < dag->n_multi; i++) {
        uint32_t v = dag->multi[i];
        sched_atomic_store_u32(&inst->join[v], dag->nodes[v].pred, SCHED_RELAXED);
    }
    if (dag->n_nodes == 0) {
        sched_i_instance_complete(inst);
        return 0;
    }
    /* One item releases the sources (the root's successors), split if there are many. */
    const sched_dag_node *root = &dag->nodes[dag->n_nodes];
    sched_item it = {.p = (uint64_t)(uintptr_t)inst | SCHED_ITEM_RANGE,
                     .x = ((uint64_t)root->succ_begin << 32) | root->succ_end};
    if (!sched_i_push(s, sched_i_current_runner(), st, it, true)) {
        /* Admission refused: undo the start, releasing anyone who started waiting. */
        uint32_t prev = old & SCHED_PHASE_STATE_MASK;
        uint32_t was = sched_atomic_exchange_u32(&inst->phase, prev, SCHED_ACQ_REL);
        if (was & SCHED_PHASE_WAITERS)
            sched_futex_wake_all(&inst->phase);
        return -EAGAIN;
    }
    return 0;
}

/* Waits until the phase is not RUNNING or `deadline_ns` (0: none) passes. */
static int wait_phase(sched_instance *inst, uint64_t deadline_ns)
{
    uint32_t p = sched_atomic_load_u32(&inst->phase, SCHED_ACQUIRE);
    if ((p & SCHED_PHASE_STATE_MASK) != SCHED_PHASE_RUNNING)
        return 0;
    /* Spin first: a short DAG completes faster than a futex round trip. */
    sched *s = inst->s;
    uint64_t spin_ns = s != NULL ? (uint64_t)s->cfg.spin_us * 1000u : 0;
    uint64_t now = sched_now_ns();
    uint64_t spin_end = now + spin_ns;
    if (deadline_ns != 0 && deadline_ns < spin_end)
        spin_end = deadline_ns;
    for (uint32_t i = 1;; i++) {
        p = sched_atomic_load_u32(&inst->phase, SCHED_ACQUIRE);
        if ((p & SCHED_PHASE_STATE_MASK) != SCHED_PHASE_RUNNING)
            return 0;
        if ((i & 15) == 0 && sched_now_ns() >= spin_end)
            break;
        sched_cpu_relax();
    }
    for (;;) {
        p = sched_atomic_load_u32(&inst->phase, SCHED_ACQUIRE);
        if ((p & SCHED_PHASE_STATE_MASK) != SCHED_PHASE_RUNNING)
            return 0;
        if (!(p & SCHED_PHASE_WAITERS)) {
            if (!sched_atomic_cas_u32(&inst->phase, &p, p | SCHED_PHASE_WAITERS, SCHED_ACQ_REL))
                continue;
            p |= SCHED_PHASE_WAITERS;
        }
        if (deadline_ns != 0 && sched_now_ns() >= deadline_ns)
            return -ETIMEDOUT;
        sched_futex_wait(&inst->phase, p, deadline_ns);
    }
}

int sched_instance_wait(sched_instance *inst)
{
    if (inst == NULL)
        return -EINVAL;
    (void)wait_phase(inst, 0);
    return (int)sched_atomic_load_u32(&inst->status, SCHED_ACQUIRE);
}

int sched_instance_wait_for(sched_instance *inst, uint64_t timeout_ns)
{
    if (inst == NULL)
        return -EINVAL;
    uint64_t deadline = sched_now_ns() + timeout_ns;
    if (deadline == 0)
        deadline = 1;
    return wait_phase(inst, deadline);
}

int sched_instance_cancel(sched_instance *inst)
{
    if (inst == NULL || !sched_instance_running(inst))
        return -EINVAL;
    sched_i_instance_fail(inst, SCHED_CANCELLED);
    return 0;
}

int sched_instance_complete_node(sched_instance *inst, uint32_t node, int status)
{
    if (inst == NULL || node >= inst->dag->n_nodes || !sched_instance_running(inst))
        return -EINVAL;
    if (status != SCHED_OK)
        sched_i_instance_fail(inst, status);
    sched_runner *r = sched_i_current_runner();
    sched_runner outside = {.s = inst->s, .id = SCHED_NONE, .stream = SCHED_NONE};
    if (r == NULL || r->s != inst->s)
        r = &outside;
    sched_i_finish_node(r, inst, node);
    return 0;
}

int sched_instance_status(const sched_instance *inst)
{
    return inst != NULL ? (int)sched_atomic_load_u32(&inst->status, SCHED_ACQUIRE) : -EINVAL;
}

bool sched_instance_running(const sched_instance *inst)
{
    return inst != NULL && (sched_atomic_load_u32(&inst->phase, SCHED_ACQUIRE) &
                            SCHED_PHASE_STATE_MASK) == SCHED_PHASE_RUNNING;
}

uint64_t sched_instance_id(const sched_instance *inst)
{
    return inst != NULL ? inst->id : 0;
}

void *sched_instance_user_arg(const sched_instance *inst)
{
    return inst != NULL ? inst->user_arg : NULL;
}
