/* The per-plugin kernel registry: kernels registered per (domain, op_type),
 * picked per node by their `supports` predicate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/kernel.h"

struct rn_kernel_registry {
    int count, cap;
    const plugin_kernel **kernels;
};

rn_status plugin_kernel_registry_create(plugin_kernel_registry **out)
{
    plugin_kernel_registry *r = calloc(1, sizeof *r);
    if (r == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "kernel registry: out of memory");
    *out = r;
    return RN_OK;
}

void plugin_kernel_registry_free(plugin_kernel_registry *r)
{
    if (r == NULL)
        return;
    free(r->kernels);
    free(r);
}

rn_status plugin_kernel_registry_add(plugin_kernel_registry *r, const plugin_kernel *k)
{
    if (k == NULL || k->op_type == NULL || k->run == NULL || k->supports == NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "kernel registry: a kernel needs op_type, supports and run");
    if (r->count == r->cap) {
        int ncap = r->cap ? r->cap * 2 : 64;
        const plugin_kernel **p = realloc(r->kernels, (size_t)ncap * sizeof *p);
        if (p == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "kernel registry: out of memory");
        r->kernels = p;
        r->cap = ncap;
    }
    r->kernels[r->count++] = k;
    return RN_OK;
}

rn_status plugin_kernel_registry_add_list(plugin_kernel_registry *r,
                                          const plugin_kernel *const *list)
{
    for (; *list != NULL; list++) {
        rn_status st = plugin_kernel_registry_add(r, *list);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

rn_status plugin_kernel_registry_add_versioned(plugin_kernel_registry *r,
                                               const rn_kernel_list *list)
{
    if (list == NULL || list->kernels == NULL)
        return rn_set_error(RN_INVALID_ARG, "kernel list: no kernels");
    if (list->abi_version != RN_KERNEL_ABI_VERSION)
        return rn_set_error(RN_INVALID_ARG,
                            "kernel list built for kernel ABI %u, this runtime has %u",
                            (unsigned)list->abi_version, (unsigned)RN_KERNEL_ABI_VERSION);
    return plugin_kernel_registry_add_list(r, list->kernels);
}

static bool same_domain(const char *a, const char *b)
{
    if (a == NULL || strcmp(a, "ai.onnx") == 0)
        a = "";
    if (b == NULL || strcmp(b, "ai.onnx") == 0)
        b = "";
    return strcmp(a, b) == 0;
}

/* Whether a node reads or writes a sequence or an optional. */
static bool touches_values(const graph_node *node)
{
    for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k] != NULL && node->inputs[k]->kind != GRAPH_KIND_TENSOR)
            return true;
    for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k] != NULL && node->outputs[k]->kind != GRAPH_KIND_TENSOR)
            return true;
    return false;
}

/* Whether k serves node's op and its supports() accepts the node; *why
 * names the reason when not. */
static bool accepts(const plugin_kernel *k, const graph_node *node, bool values, const char **why)
{
    *why = NULL;
    if (values && !k->values) {
        *why = "sequence or optional values";
        return false;
    }
    return k->supports(node, why);
}

static bool serves(const plugin_kernel *k, const graph_node *node)
{
    return strcmp(k->op_type, node->op_type) == 0 && same_domain(k->domain, node->domain);
}

void plugin_kernel_registry_next(const plugin_kernel_registry *r, const graph_node *node,
                                 const plugin_kernel *after, const plugin_kernel **out)
{
    bool values = touches_values(node), past = false;
    *out = NULL;
    for (int i = 0; i < r->count; i++) {
        const plugin_kernel *k = r->kernels[i];
        if (!past) {
            past = k == after;
            continue;
        }
        const char *why;
        if (serves(k, node) && accepts(k, node, values, &why)) {
            *out = k;
            return;
        }
    }
}

bool plugin_kernel_may_fall_back(rn_status st)
{
    return st == RN_UNSUPPORTED || st == RN_NOT_IMPLEMENTED || st == RN_DEVICE_ERROR ||
           st == RN_INTERNAL;
}

rn_status plugin_kernel_registry_pick(const plugin_kernel_registry *r, const graph_node *node,
                                      const plugin_kernel **out)
{
    char reasons[512] = "";
    size_t used = 0;
    bool any = false;
    bool values = touches_values(node);
    for (int i = 0; i < r->count; i++) {
        const plugin_kernel *k = r->kernels[i];
        if (!serves(k, node))
            continue;
        any = true;
        const char *why;
        if (accepts(k, node, values, &why)) {
            *out = k;
            return RN_OK;
        }
        if (used < sizeof reasons)
            used += (size_t)snprintf(reasons + used, sizeof reasons - used, "%s%s",
                                     used ? "; " : "", why ? why : "not supported");
    }
    if (!any)
        return rn_set_error(RN_UNSUPPORTED, "node '%s': no kernel for op '%s' on this device",
                            node->name, node->op_type);
    return rn_set_error(RN_UNSUPPORTED, "node '%s' (%s): not supported: %s", node->name,
                        node->op_type, reasons);
}
