/* CPU_BIND_THREAD on the CPU device (bind.c): pinning each stream's worker
 * thread (and its OpenMP team) to cores. */
#ifndef RUNNEL_PLUGINS_CPU_BIND_H
#define RUNNEL_PLUGINS_CPU_BIND_H

#include <stdbool.h>

#include "plugins/api/properties.h"

/* Pins the calling thread once when it is a stream's worker (later calls
 * return at once; other threads are never pinned): with PLUGIN_BIND_YES
 * stream s of `threads` cores gets cores s * threads onwards of the
 * process's affinity mask (wrapping around) and each of its threads one of
 * them (the worker the first, its OpenMP team the others); with PLUGIN_BIND_NUMA its threads get
 * every allowed core of the NUMA node of the stream's first core; PLUGIN_BIND_NO pins nothing. Call
 * on a stream's worker before its first OpenMP parallel region, so that
 * the team is created inside the stream's cores. */
void cpu_bind_enter(plugin_bind_thread mode, int threads);

/* The device's read-only property CPU_PINNED_THREADS (a debug aid, and
 * how tests see inside the runs): one entry per thread pinned in this
 * process, "worker:CPU:N" or "team:CPU:N" separated by spaces, where N is
 * how many cores the thread's mask held when it read it back with
 * sched_getaffinity right after pinning itself and CPU the lowest of them
 * (the first 256 threads). RN_NOT_FOUND for other keys. */
rn_status cpu_bind_get_property(const char *key, char *buf, size_t size);

#endif /* RUNNEL_PLUGINS_CPU_BIND_H */
