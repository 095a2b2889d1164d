/* CPU_BIND_THREAD (OpenVINO's CPU pinning) on the CPU device.
 *
 * A stream's worker pins itself on its first oneDNN primitive (cpu_execute,
 * before its OpenMP team exists): stream s of T cores takes cores s * T to
 * s * T + T - 1 (wrapping around) of those the process may run on (its
 * affinity mask as the first pinning thread inherited it), so THROUGHPUT's
 * single-core streams get one core each. A request run inline (sync) runs
 * in the user's thread, which is never pinned. With YES
 * the worker moves onto the block first, then a parallel region of the
 * stream's team size pins each team thread (created there, inside the
 * block) to one core of it, the worker to the first; with NUMA every
 * thread of the stream gets every allowed core of the NUMA node of the
 * block's first core (/sys/devices/system/node; one node when absent). A
 * worker stays pinned for its life: pools are shared by stream
 * configuration, and a pinned worker serves every compiled model of its
 * pool. */
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "plugins/cpu/bind.h"
#include "sched/sched.h"

#define MAX_RECORDS 256

static pthread_once_t allowed_once = PTHREAD_ONCE_INIT;
static int allowed[CPU_SETSIZE]; /* the process's cores, ascending */
static int n_allowed;
static _Thread_local bool tls_bound;

static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;
/* What a pinned thread's mask read back right after pinning. */
typedef struct cpu_bind_record {
    int n_cpus;
    int first_cpu;
    bool worker; /* a stream's worker (else a thread of its OpenMP team) */
} cpu_bind_record;

static cpu_bind_record records[MAX_RECORDS];
static int n_records;

static void allowed_init(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            allowed[n_allowed++] = c;
}

/* Whether core c is in NUMA node `node`'s cpulist ("0-7,16-23"). */
static bool node_has_cpu(int node, int c, bool *exists)
{
    char path[64], list[4096];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
    FILE *f = fopen(path, "r");
    *exists = f != NULL;
    if (f == NULL)
        return false;
    size_t n = fread(list, 1, sizeof list - 1, f);
    fclose(f);
    list[n] = '\0';
    for (char *p = list; *p != '\0' && *p != '\n';) {
        int lo = 0, hi = 0, used = 0;
        if (sscanf(p, "%d%n", &lo, &used) != 1)
            break;
        p += used;
        hi = lo;
        if (*p == '-' && sscanf(p + 1, "%d%n", &hi, &used) == 1)
            p += 1 + used;
        if (c >= lo && c <= hi)
            return true;
        if (*p == ',')
            p++;
    }
    return false;
}

/* The allowed cores of the NUMA node holding core c (all when the system
 * has no node information). */
static void numa_set(int c, cpu_set_t *set)
{
    CPU_ZERO(set);
    int node = -1;
    bool exists = true;
    for (int k = 0; exists && node < 0 && k < 1024; k++)
        if (node_has_cpu(k, c, &exists))
            node = k;
    for (int i = 0; i < n_allowed; i++)
        if (node < 0 || node_has_cpu(node, allowed[i], &exists))
            CPU_SET(allowed[i], set);
}

/* Pins the calling thread to `set` and records what its mask reads back. */
static void pin(const cpu_set_t *set, bool worker)
{
    if (pthread_setaffinity_np(pthread_self(), sizeof *set, set) != 0)
        return;
    cpu_set_t now;
    if (sched_getaffinity(0, sizeof now, &now) != 0)
        return;
    cpu_bind_record r = {.n_cpus = CPU_COUNT(&now), .first_cpu = -1, .worker = worker};
    for (int c = 0; c < CPU_SETSIZE && r.first_cpu < 0; c++)
        if (CPU_ISSET(c, &now))
            r.first_cpu = c;
    pthread_mutex_lock(&record_lock);
    if (n_records < MAX_RECORDS)
        records[n_records] = r;
    n_records++;
    pthread_mutex_unlock(&record_lock);
}

void cpu_bind_enter(plugin_bind_thread mode, int threads)
{
    if (mode == PLUGIN_BIND_NO || tls_bound)
        return;
    /* Only a stream's worker: a request run inline runs in the user's
     * thread, which is not the device's to pin. */
    int stream = sched_current_stream();
    if (stream < 0)
        return;
    tls_bound = true;
    pthread_once(&allowed_once, allowed_init);
    if (n_allowed == 0)
        return;
#if defined(__SANITIZE_THREAD__)
    threads = 1; /* as cpu_enter: no OpenMP teams under ThreadSanitizer */
#endif
    if (threads < 1)
        threads = 1;
    if (threads > n_allowed)
        threads = n_allowed;
    int first = (int)((unsigned)stream * (unsigned)threads % (unsigned)n_allowed);
    cpu_set_t set;
    if (mode == PLUGIN_BIND_NUMA) {
        numa_set(allowed[first], &set);
        if (threads == 1) {
            pin(&set, true);
            return;
        }
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
#pragma omp parallel num_threads(threads)
        pin(&set, omp_get_thread_num() == 0);
        return;
    }
    CPU_ZERO(&set);
    for (int i = 0; i < threads; i++)
        CPU_SET(allowed[(first + i) % n_allowed], &set);
    if (threads == 1) {
        pin(&set, true);
        return;
    }
    /* The team is created inside the block, then each thread takes one core. */
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
#pragma omp parallel num_threads(threads)
    {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(allowed[(first + omp_get_thread_num()) % n_allowed], &one);
        pin(&one, omp_get_thread_num() == 0);
    }
}

rn_status cpu_bind_get_property(const char *key, char *buf, size_t size)
{
    if (strcmp(key, "CPU_PINNED_THREADS") != 0)
        return rn_set_error(RN_NOT_FOUND, "unknown property '%s'", key);
    static char text[MAX_RECORDS * 24];
    static pthread_mutex_t text_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&text_lock);
    pthread_mutex_lock(&record_lock);
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < n_records && i < MAX_RECORDS; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s:%d:%d", i ? " " : "",
                                 records[i].worker ? "worker" : "team", records[i].first_cpu,
                                 records[i].n_cpus);
    pthread_mutex_unlock(&record_lock);
    rn_status st = plugin_property_string(key, text, buf, size);
    pthread_mutex_unlock(&text_lock);
    return st;
}
