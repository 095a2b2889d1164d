/* The generic query_model: for each original layer name of a model (the
 * fused names of its nodes, and its parameters and constants, which follow
 * their consumers), whether the registry has a kernel that runs it. */
#ifndef RUNNEL_PLUGINS_API_QUERY_H
#define RUNNEL_PLUGINS_API_QUERY_H

#include "plugins/api/kernel.h"

typedef struct plugin_query_result {
    size_t count, cap;
    char **names;    /* malloc'ed */
    bool *supported; /* per name */
} plugin_query_result;

rn_status plugin_query_model(const graph *model, const plugin_kernel_registry *registry,
                             plugin_query_result *out);

/* The same after the plugin's passes: `transformed` is what the device would
 * compile; every node and value name of the original `model` is answered,
 * and a name no transformed node stands for any more was optimised away
 * (folded, removed) and counts as supported. */
rn_status plugin_query_model_transformed(const graph *model, const graph *transformed,
                                         const plugin_kernel_registry *registry,
                                         plugin_query_result *out);
void plugin_query_result_release(plugin_query_result *q);

#endif /* RUNNEL_PLUGINS_API_QUERY_H */
