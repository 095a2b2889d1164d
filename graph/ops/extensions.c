/* Op schemas added at run time by extensions (rn_core_add_extension). The
 * list only grows: readers take the count with acquire ordering and read the
 * entries before it, so look-ups need no lock while a writer appends. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "graph/ops.h"

#define MAX_EXTENSION_OPS 1024

static const graph_op_schema *extension_ops[MAX_EXTENSION_OPS];
static atomic_int n_extension_ops;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_domain(const char *a, const char *b)
{
    if (a == NULL || strcmp(a, "ai.onnx") == 0)
        a = "";
    if (b == NULL || strcmp(b, "ai.onnx") == 0)
        b = "";
    return strcmp(a, b) == 0;
}

const graph_op_schema *graph_op_find_extension(const char *domain, const char *op_type)
{
    int n = atomic_load_explicit(&n_extension_ops, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (strcmp(extension_ops[i]->op_type, op_type) == 0 &&
            same_domain(extension_ops[i]->domain, domain))
            return extension_ops[i];
    return NULL;
}

rn_status graph_op_register(const graph_op_schema *schema)
{
    if (schema == NULL || schema->op_type == NULL || schema->domain == NULL)
        return rn_set_error(RN_INVALID_ARG, "register op: a schema needs a domain and an op_type");
    pthread_mutex_lock(&register_lock);
    rn_status st = RN_OK;
    const graph_op_schema *known = graph_op_find(schema->domain, schema->op_type);
    if (known == schema) {
        st = RN_OK; /* the same extension registered again (another core) */
    } else if (known != NULL) {
        st = rn_set_error(RN_INVALID_ARG, "register op: '%s%s%s' is already defined",
                          schema->domain, schema->domain[0] ? "." : "", schema->op_type);
    } else {
        int n = atomic_load_explicit(&n_extension_ops, memory_order_relaxed);
        if (n == MAX_EXTENSION_OPS) {
            st = rn_set_error(RN_OUT_OF_MEMORY, "register op: more than %d extension ops",
                              MAX_EXTENSION_OPS);
        } else {
            extension_ops[n] = schema;
            atomic_store_explicit(&n_extension_ops, n + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&register_lock);
    return st;
}
