/* The executor manager: schedulers shared by name and configuration,
 * refcounted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executors/executors.h"

struct executors_pool {
    executors_config cfg;
    char name[64]; /* cfg.name points here */
    sched *s;
    uint32_t callback_id, wait_id;
    int refs;
    executors_pool *next;
};

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static executors_pool *pools;

uint32_t executors_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1;
}

static rn_status pool_create(const executors_config *cfg, executors_pool **out)
{
    executors_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "executors: out of memory");
    p->cfg = *cfg;
    snprintf(p->name, sizeof p->name, "%s", cfg->name != NULL ? cfg->name : "");
    p->cfg.name = p->name;
    sched_config sc = sched_config_default();
    sc.n_streams = cfg->n_streams;
    sc.workers_per_stream = cfg->threads_per_stream;
    sc.trace = cfg->trace;
    int rc = sched_create(&sc, &p->s);
    if (rc == 0)
        rc = sched_add_executor(p->s, "callback", 1, &p->callback_id);
    if (rc == 0)
        rc = sched_add_executor(p->s, "device-wait", 1, &p->wait_id);
    if (rc != 0) {
        sched_destroy(p->s);
        free(p);
        /* ENOMEM: an allocation failed; EAGAIN: the system could not give a
         * thread what it needs (memory, or the limit on threads). */
        return rn_set_error(rc == -ENOMEM || rc == -EAGAIN ? RN_OUT_OF_MEMORY : RN_INTERNAL,
                            "executors: cannot start %u streams x %u threads: %s", cfg->n_streams,
                            cfg->threads_per_stream, strerror(-rc));
    }
    *out = p;
    return RN_OK;
}

rn_status executors_acquire(const executors_config *cfg, executors_pool **out)
{
    if (cfg->n_streams < 1 || cfg->threads_per_stream < 1)
        return rn_set_error(RN_INVALID_ARG, "executors: %u streams x %u threads", cfg->n_streams,
                            cfg->threads_per_stream);
    const char *name = cfg->name != NULL ? cfg->name : "";
    if (strlen(name) >= sizeof((executors_pool *)NULL)->name)
        return rn_set_error(RN_INVALID_ARG, "executors: the name '%s' is too long", name);
    pthread_mutex_lock(&pools_lock);
    executors_pool *p = pools;
    while (p != NULL &&
           (strcmp(p->name, name) != 0 || p->cfg.n_streams != cfg->n_streams ||
            p->cfg.threads_per_stream != cfg->threads_per_stream || p->cfg.trace != cfg->trace))
        p = p->next;
    rn_status st = RN_OK;
    if (p == NULL) {
        st = pool_create(cfg, &p);
        if (st == RN_OK) {
            p->next = pools;
            pools = p;
        }
    }
    if (st == RN_OK) {
        p->refs++;
        *out = p;
    }
    pthread_mutex_unlock(&pools_lock);
    return st;
}

void executors_retain(executors_pool *pool)
{
    pthread_mutex_lock(&pools_lock);
    pool->refs++;
    pthread_mutex_unlock(&pools_lock);
}

static void destroy(executors_pool *pool)
{
    sched_destroy(pool->s);
    free(pool);
}

static void *reap(void *arg)
{
    destroy(arg);
    return NULL;
}

void executors_release(executors_pool *pool)
{
    if (pool == NULL)
        return;
    pthread_mutex_lock(&pools_lock);
    bool last = --pool->refs == 0;
    if (last) {
        executors_pool **pp = &pools;
        while (*pp != pool)
            pp = &(*pp)->next;
        *pp = pool->next;
    }
    pthread_mutex_unlock(&pools_lock);
    if (!last)
        return;
    if (sched_is_own_thread(pool->s)) {
        /* sched_destroy joins every thread of the pool, this one too: a thread of its own
         * does it once this one has returned to its loop. Should that thread not start, the
         * pool stays (its threads idle) rather than be freed under a running thread. */
        pthread_attr_t attr;
        pthread_t reaper;
        if (pthread_attr_init(&attr) == 0) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            if (pthread_create(&reaper, &attr, reap, pool) == 0)
                (void)pthread_setname_np(reaper, "rn-pool-reaper");
            pthread_attr_destroy(&attr);
        }
        return;
    }
    destroy(pool);
}

sched *executors_sched(const executors_pool *pool)
{
    return pool->s;
}

uint32_t executors_callback_id(const executors_pool *pool)
{
    return pool->callback_id;
}

uint32_t executors_wait_id(const executors_pool *pool)
{
    return pool->wait_id;
}

int executors_pool_count(void)
{
    pthread_mutex_lock(&pools_lock);
    int n = 0;
    for (executors_pool *p = pools; p != NULL; p = p->next)
        n++;
    pthread_mutex_unlock(&pools_lock);
    return n;
}
