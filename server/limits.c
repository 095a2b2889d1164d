/* File-descriptor and memory budgets of runnel-server (see limits.h). */
#include "server/limits.h"

#include <sys/resource.h>

rn_status server_fd_budget_raise(server_fd_budget *out)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return rn_set_error(RN_IO_ERROR, "cannot read RLIMIT_NOFILE");
    server_fd_budget b = {.before = (long)r.rlim_cur};
    if (r.rlim_cur != r.rlim_max) {
        struct rlimit raised = {r.rlim_max, r.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            r = raised;
    }
    /* RLIM_INFINITY is not a number of descriptors: the kernel's ceiling
     * (fs.nr_open) is 2^20 by default. */
    const rlim_t ceiling = (rlim_t)1 << 20;
    b.soft = (long)(r.rlim_cur == RLIM_INFINITY || r.rlim_cur > ceiling ? ceiling : r.rlim_cur);
    b.hard = (long)(r.rlim_max == RLIM_INFINITY || r.rlim_max > ceiling ? ceiling : r.rlim_max);
    b.reserve = b.soft / 8 > 64 ? b.soft / 8 : 64;
    b.connections = b.soft - b.reserve;
    if (b.connections < 16)
        return rn_set_error(RN_IO_ERROR,
                            "only %ld file descriptors (RLIMIT_NOFILE, hard limit %ld): "
                            "runnel-server keeps %ld for itself and needs 16 for connections",
                            b.soft, b.hard, b.reserve);
    *out = b;
    return RN_OK;
}

int server_byte_budget_take(server_byte_budget *budget, size_t bytes)
{
    if (budget == NULL || budget->limit == 0)
        return 1;
    size_t held = atomic_load(&budget->held);
    do {
        if (bytes > budget->limit - held || held > budget->limit)
            return 0;
    } while (!atomic_compare_exchange_weak(&budget->held, &held, held + bytes));
    return 1;
}

void server_byte_budget_give(server_byte_budget *budget, size_t bytes)
{
    if (budget != NULL && budget->limit != 0)
        atomic_fetch_sub(&budget->held, bytes);
}
