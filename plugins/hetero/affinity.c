/* HETERO's affinity: which listed device runs each node of a model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "graph/ops.h"
#include "plugins/hetero/hetero.h"

/* supported[d * n_nodes + i]: whether device d's query_model says it runs
 * node i (every original name the node stands for). */
static rn_status query_devices(const graph *g, const plugin_devices *devs, const rn_property *fwd,
                               size_t n_fwd, bool *supported)
{
    int n = g->n_nodes;
    for (int d = 0; d < devs->n; d++) {
        const plugin_device *dev = &devs->at[d];
        bool *row = &supported[(size_t)d * (size_t)n];
        if (dev->ops->query_model == NULL)
            continue; /* a device that cannot say takes nothing */
        char **names = NULL;
        bool *ok = NULL;
        size_t count = 0;
        rn_status st = dev->ops->query_model(dev->plugin, g, fwd, n_fwd, &names, &ok, &count);
        if (st != RN_OK)
            return rn_wrap_error(st, "HETERO: query_model of %s: ", dev->name);
        for (int i = 0; i < n; i++) {
            const graph_node *node = g->nodes[i];
            bool all = node->n_fused > 0;
            for (int f = 0; f < node->n_fused && all; f++) {
                bool found = false;
                for (size_t e = 0; e < count && !found; e++)
                    if (strcmp(names[e], node->fused_names[f]) == 0)
                        found = ok[e];
                all = found;
            }
            row[i] = all;
        }
        for (size_t e = 0; e < count; e++)
            free(names[e]);
        free(names);
        free(ok);
    }
    return RN_OK;
}

/* The error for node i that no device supports: each device's reason, from
 * compiling the node alone there. */
static rn_status unsupported_error(const graph *g, int i, const plugin_devices *devs,
                                   const rn_property *fwd, size_t n_fwd)
{
    const graph_node *node = g->nodes[i];
    char reasons[2048] = "";
    size_t used = 0;
    graph *one = NULL;
    rn_status built = hetero_single_node(g, i, &one);
    for (int d = 0; d < devs->n; d++) {
        const plugin_device *dev = &devs->at[d];
        char why[512];
        if (built != RN_OK) {
            snprintf(why, sizeof why, "its query_model answers unsupported");
        } else {
            const rn_compiled_model_ops *ops;
            rn_plugin_compiled *compiled;
            rn_status st =
                dev->ops->compile_model(dev->plugin, one, NULL, fwd, n_fwd, &ops, &compiled);
            if (st == RN_OK) {
                ops->free(compiled);
                snprintf(why, sizeof why, "its query_model answers unsupported");
            } else {
                snprintf(why, sizeof why, "%s", rn_last_error());
            }
        }
        int w = snprintf(reasons + used, sizeof reasons - used, "%s%s: %s", d ? "; " : "",
                         dev->name, why);
        if (w > 0 && (size_t)w < sizeof reasons - used)
            used += (size_t)w;
    }
    graph_free(one);
    return rn_set_error(RN_UNSUPPORTED, "HETERO: node '%s' (op %s) is supported by no device (%s)",
                        node->name, node->op_type, reasons);
}

/* Applies AFFINITY ("node=DEVICE;..."): user_set[i] marks the nodes it
 * places. */
static rn_status user_affinity(const graph *g, const plugin_devices *devs, const char *spec,
                               const bool *supported, int *device_of, bool *user_set)
{
    char buf[sizeof((hetero_config *)0)->affinity];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ";", &save); item != NULL; item = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(item, '=');
        if (eq == NULL)
            return rn_set_error(RN_INVALID_ARG,
                                "property AFFINITY: '%s' is not 'node=DEVICE' (entries are "
                                "separated by ';')",
                                item);
        *eq = '\0';
        const char *device = eq + 1;
        int d = -1;
        for (int k = 0; k < devs->n; k++)
            if (strcasecmp(devs->at[k].name, device) == 0)
                d = k;
        if (d < 0)
            return rn_set_error(RN_INVALID_ARG,
                                "property AFFINITY: node '%s': device '%s' is not in the list",
                                item, device);
        int node = -1;
        for (int i = 0; i < g->n_nodes && node < 0; i++)
            if (strcmp(g->nodes[i]->name, item) == 0)
                node = i;
        if (node < 0)
            return rn_set_error(RN_INVALID_ARG, "property AFFINITY: the model has no node '%s'",
                                item);
        if (!supported[(size_t)d * (size_t)g->n_nodes + (size_t)node])
            return rn_set_error(RN_UNSUPPORTED,
                                "property AFFINITY: node '%s' (op %s) is set to %s, which does "
                                "not support it",
                                item, g->nodes[node]->op_type, devs->at[d].name);
        device_of[node] = d;
        user_set[node] = true;
    }
    return RN_OK;
}

/* Whether node n computes from constants or shapes only (it follows its
 * consumers): Constant-like ops, Shape and Size, and nodes all of whose
 * inputs are constants or outputs of such nodes. */
static bool is_follower(const graph_node *n, const bool *follower)
{
    static const char *const ops[] = {"Constant", "Shape", "Size", "ConstantOfShape"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (strcmp(n->op_type, ops[k]) == 0 && n->domain[0] == '\0')
            return strcmp(n->op_type, "ConstantOfShape") != 0 ||
                   (n->n_inputs > 0 && n->inputs[0] != NULL &&
                    (n->inputs[0]->constant != NULL ||
                     (n->inputs[0]->producer != NULL && follower[n->inputs[0]->producer->id])));
    bool any = false;
    for (int k = 0; k < n->n_inputs; k++) {
        const graph_value *v = n->inputs[k];
        if (v == NULL)
            continue;
        if (v->constant == NULL && (v->producer == NULL || !follower[v->producer->id]))
            return false;
        any = true;
    }
    return any;
}

/* Device d supports node i. */
#define SUPPORTS(d, i) (supported[(size_t)(d) * (size_t)g->n_nodes + (size_t)(i)])

/* Constants and shape-only subgraphs go where their consumers are. */
static void follow_consumers(const graph *g, const bool *supported, int *device_of,
                             const bool *user_set)
{
    int n = g->n_nodes;
    bool *follower = calloc((size_t)n + 1, sizeof *follower);
    if (follower == NULL)
        return; /* an optimisation only */
    for (int i = 0; i < n; i++)
        follower[i] = is_follower(g->nodes[i], follower);
    for (int i = n - 1; i >= 0; i--) {
        if (!follower[i] || user_set[i])
            continue;
        int target = -1;
        bool one = true, any = false;
        for (int j = i + 1; j < n && one; j++)
            for (int k = 0; k < g->nodes[j]->n_inputs; k++) {
                const graph_value *v = g->nodes[j]->inputs[k];
                if (v == NULL || v->producer != g->nodes[i])
                    continue;
                any = true;
                if (target >= 0 && target != device_of[j])
                    one = false;
                target = device_of[j];
            }
        for (int o = 0; o < g->n_outputs; o++)
            if (g->outputs[o]->producer == g->nodes[i])
                one = false;
        if (any && one && target != device_of[i] && SUPPORTS(target, i))
            device_of[i] = target;
    }
    free(follower);
}

/* Small islands: a connected group of at most `limit` nodes on one device,
 * fed by and feeding only nodes of one other device that supports all of
 * it, moves to that device (two or more cut edges fewer). */
static void merge_islands(const graph *g, const bool *supported, int *device_of,
                          const bool *user_set, uint32_t limit)
{
    int n = g->n_nodes;
    int *comp = malloc(((size_t)n + 1) * sizeof *comp);
    int *stack = malloc(((size_t)n + 1) * sizeof *stack);
    if (comp == NULL || stack == NULL) {
        free(comp);
        free(stack);
        return;
    }
    for (int i = 0; i < n; i++)
        comp[i] = -1;
    for (int seed = 0; seed < n; seed++) {
        if (comp[seed] >= 0)
            continue;
        /* The island of seed: nodes of its device connected to it. */
        int size = 0, top = 0, d = device_of[seed];
        comp[seed] = seed;
        stack[top++] = seed;
        int members_begin = 0;
        (void)members_begin;
        int *members = malloc(((size_t)n + 1) * sizeof *members);
        if (members == NULL)
            break;
        while (top > 0) {
            int i = stack[--top];
            members[size++] = i;
            for (int j = 0; j < n; j++) {
                if (comp[j] >= 0 || device_of[j] != d)
                    continue;
                bool linked = false;
                for (int k = 0; k < g->nodes[j]->n_inputs && !linked; k++)
                    linked = g->nodes[j]->inputs[k] != NULL &&
                             g->nodes[j]->inputs[k]->producer == g->nodes[i];
                for (int k = 0; k < g->nodes[i]->n_inputs && !linked; k++)
                    linked = g->nodes[i]->inputs[k] != NULL &&
                             g->nodes[i]->inputs[k]->producer == g->nodes[j];
                if (linked) {
                    comp[j] = seed;
                    stack[top++] = j;
                }
            }
        }
        int other = -1;
        bool fed = false, feeds = false, single = true, movable = (uint32_t)size <= limit;
        for (int m = 0; m < size && single && movable; m++) {
            int i = members[m];
            movable = !user_set[i];
            for (int k = 0; k < g->nodes[i]->n_inputs; k++) {
                const graph_value *v = g->nodes[i]->inputs[k];
                if (v == NULL || v->producer == NULL || comp[v->producer->id] == seed)
                    continue;
                int od = device_of[v->producer->id];
                single = single && (other < 0 || other == od);
                other = od;
                fed = true;
            }
            for (int j = 0; j < n; j++) {
                if (comp[j] == seed)
                    continue;
                for (int k = 0; k < g->nodes[j]->n_inputs; k++)
                    if (g->nodes[j]->inputs[k] != NULL &&
                        g->nodes[j]->inputs[k]->producer == g->nodes[i]) {
                        single = single && (other < 0 || other == device_of[j]);
                        other = device_of[j];
                        feeds = true;
                    }
            }
            for (int o = 0; o < g->n_outputs; o++)
                if (g->outputs[o]->producer == g->nodes[i])
                    feeds = false, single = false; /* a result: it stays */
        }
        for (int m = 0; m < size && movable && single && fed && feeds; m++)
            movable = SUPPORTS(other, members[m]);
        if (movable && single && fed && feeds && other >= 0 && other != d)
            for (int m = 0; m < size; m++)
                device_of[members[m]] = other;
        free(members);
    }
    free(comp);
    free(stack);
}

/* MODEL_DISTRIBUTION_POLICY=PIPELINE_PARALLEL: consecutive stretches of the
 * node order, one per device, of about equal work (output elements), each
 * node on its stretch's device when it supports it. */
static void distribute(const graph *g, const plugin_devices *devs, const bool *supported,
                       int *device_of, const bool *user_set)
{
    int n = g->n_nodes;
    double total = 0;
    double *cost = malloc(((size_t)n + 1) * sizeof *cost);
    if (cost == NULL)
        return;
    for (int i = 0; i < n; i++) {
        cost[i] = 1;
        for (int o = 0; o < g->nodes[i]->n_outputs; o++) {
            const graph_value *v = g->nodes[i]->outputs[o];
            if (v != NULL && graph_shape_is_static(&v->shape))
                cost[i] += (double)graph_shape_count(&v->shape);
        }
        total += cost[i];
    }
    double before = 0;
    for (int i = 0; i < n; i++) {
        int stage = (int)((before + cost[i] / 2) * devs->n / total);
        if (stage >= devs->n)
            stage = devs->n - 1;
        before += cost[i];
        if (!user_set[i] && SUPPORTS(stage, i))
            device_of[i] = stage;
    }
    free(cost);
}

rn_status hetero_affinity(const graph *g, const plugin_devices *devs, const hetero_config *cfg,
                          const rn_property *forward, size_t n_forward, int *device_of)
{
    int n = g->n_nodes;
    bool *supported = calloc((size_t)devs->n * (size_t)n + 1, sizeof *supported);
    bool *user_set = calloc((size_t)n + 1, sizeof *user_set);
    rn_status st = supported != NULL && user_set != NULL
                       ? RN_OK
                       : rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory");
    if (st == RN_OK)
        st = query_devices(g, devs, forward, n_forward, supported);
    /* The first device that supports a node takes it. */
    for (int i = 0; i < n && st == RN_OK; i++) {
        device_of[i] = -1;
        for (int d = devs->n - 1; d >= 0; d--)
            if (SUPPORTS(d, i))
                device_of[i] = d;
    }
    if (st == RN_OK && cfg->affinity[0] != '\0')
        st = user_affinity(g, devs, cfg->affinity, supported, device_of, user_set);
    for (int i = 0; i < n && st == RN_OK; i++)
        if (device_of[i] < 0)
            st = unsupported_error(g, i, devs, forward, n_forward);
    if (st == RN_OK) {
        if (strcmp(cfg->distribution, "PIPELINE_PARALLEL") == 0)
            distribute(g, devs, supported, device_of, user_set);
        follow_consumers(g, supported, device_of, user_set);
        merge_islands(g, supported, device_of, user_set, cfg->island_nodes);
        follow_consumers(g, supported, device_of, user_set);
    }
    free(supported);
    free(user_set);
    return st;
}
