/* The generic plan-based device (device.h): one implementation of the
 * rn_plugin_ops and rn_compiled_model_ops of every device that compiles a
 * model into the generic plan, driven by the device's iface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/const_eval.h"
#include "plugins/api/device.h"
#include "plugins/api/export.h"
#include "plugins/api/query.h"

/* ---- values: the shared ones and the device's own ---- */

/* A copy of `size` bytes of `own` (NULL for none); false when out of memory. */
static bool own_copy(const void *own, size_t size, void **out)
{
    *out = NULL;
    if (size == 0)
        return true;
    *out = malloc(size);
    if (*out == NULL)
        return false;
    memcpy(*out, own, size);
    return true;
}

static const plugin_property_def *own_row(const plugin_device_iface *iface, const char *key)
{
    return plugin_property_find(iface->own_keys, iface->n_own_keys, key);
}

static bool listed(const char *const *keys, const char *key)
{
    for (; keys != NULL && *keys != NULL; keys++)
        if (strcmp(*keys, key) == 0)
            return true;
    return false;
}

/* DEVICE_ID must name one of the device's devices. */
static rn_status check_id(const plugin_device *p, const char *id)
{
    if (p->iface->check_device_id != NULL)
        return p->iface->check_device_id(p->context, id);
    if (id[0] == '\0' || strcmp(id, "0") == 0)
        return RN_OK;
    return rn_set_error(RN_INVALID_ARG, "%s: DEVICE_ID '%s' does not exist (available: 0)",
                        p->iface->info.name, id);
}

/* Applies `props` to the shared values and the device's own ones (both
 * left unchanged on error) after checking DEVICE_ID; keys of extra_rw_keys
 * are skipped (the caller hands them to set_property). */
static rn_status apply(const plugin_device *p, plugin_properties *shared, void *own,
                       const rn_property *props, size_t n)
{
    const plugin_device_iface *iface = p->iface;
    rn_property *rest = calloc(n + 1, sizeof *rest);
    if (rest == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", iface->info.name);
    size_t n_rest = 0;
    rn_status st = RN_OK;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        if (props[i].key != NULL && props[i].value != NULL &&
            strcmp(props[i].key, "DEVICE_ID") == 0)
            st = check_id(p, props[i].value);
        if (props[i].key == NULL || !listed(iface->extra_rw_keys, props[i].key))
            rest[n_rest++] = props[i];
    }
    if (st == RN_OK)
        st = plugin_properties_apply_own(iface->own_keys, iface->n_own_keys, iface->own_size,
                                         shared, own, rest, n_rest);
    free(rest);
    return st;
}

/* Joins NULL-ended lists with spaces into buf. */
typedef struct key_list {
    char text[4096];
    size_t used;
} key_list;

static void list_add(key_list *l, const char *key)
{
    if (l->used < sizeof l->text)
        l->used += (size_t)snprintf(l->text + l->used, sizeof l->text - l->used, "%s%s",
                                    l->used ? " " : "", key);
}

static void list_add_all(key_list *l, const char *const *keys)
{
    for (; keys != NULL && *keys != NULL; keys++)
        list_add(l, *keys);
}

/* The table's keys of `scope` that `p` has: read-only (rw false) or not. */
static void list_table(key_list *l, const plugin_properties *p, plugin_property_scope scope,
                       bool rw, bool cpu)
{
    for (int k = 0; k < PLUGIN_N_KEYS; k++) {
        const plugin_property_def *d = &plugin_property_table[k];
        bool is_cpu = d->devices == PLUGIN_DEVICES_HOST_CPU;
        if ((d->scope & scope) && (d->access != PLUGIN_PROPERTY_RO) == rw && is_cpu == cpu &&
            (!is_cpu || p->cpu_keys))
            list_add(l, d->key);
    }
}

static void list_own(key_list *l, const plugin_device_iface *iface)
{
    for (size_t i = 0; i < iface->n_own_keys; i++)
        list_add(l, iface->own_keys[i].key);
}

static rn_status list_result(const char *key, const key_list *l, char *buf, size_t size)
{
    if (l->used >= sizeof l->text)
        return rn_set_error(RN_INTERNAL, "%s: the list is too long", key);
    return plugin_property_string(key, l->text, buf, size);
}

/* A row of the table's INFO rows of `scope` (the device's texts); false
 * when `key` is not one. */
static bool table_read(const plugin_device_iface *iface, plugin_property_scope scope,
                       const char *key, rn_status *st, char *buf, size_t size)
{
    const plugin_property_def *d = plugin_property_find(plugin_property_table, PLUGIN_N_KEYS, key);
    if (d == NULL || !(d->scope & scope) || d->where != PLUGIN_WHERE_INFO)
        return false;
    const char *text = *(const char *const *)((const char *)&iface->info + d->offset);
    *st = plugin_property_string(key, text != NULL ? text : d->default_value, buf, size);
    return true;
}

/* A key of the table's INFO rows of `scope`, a shared read-write one or
 * one of the device's own rows (under `lock`); an unknown key is
 * RN_NOT_FOUND naming it and the device (or its compiled model). */
static rn_status read_values(const plugin_device_iface *iface, plugin_property_scope scope,
                             pthread_mutex_t *lock, const plugin_properties *props, const void *own,
                             const char *key, char *buf, size_t size)
{
    rn_status st;
    rn_clear_error();
    pthread_mutex_lock(lock);
    if (!table_read(iface, scope, key, &st, buf, size))
        st = plugin_properties_get_own(iface->own_keys, iface->n_own_keys, props, own, key, buf,
                                       size);
    pthread_mutex_unlock(lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "%s%s: unknown property '%s'", iface->info.name,
                            scope == PLUGIN_SCOPE_COMPILED ? " compiled model" : "", key);
    return st;
}

/* ---- the device ---- */

rn_status plugin_device_create(const plugin_device_iface *iface, plugin_device **out)
{
    plugin_device *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", iface->info.name);
    p->iface = iface;
    rn_status st = iface->open != NULL ? iface->open(&p->context) : RN_OK;
    if (st != RN_OK) { /* the message says why: no driver, no device */
        free(p);
        return st;
    }
    if (iface->own_size > 0 && (p->own = malloc(iface->own_size)) == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", iface->info.name);
    if (st == RN_OK)
        st = plugin_kernel_registry_create(&p->kernels);
    if (st == RN_OK)
        st = iface->register_kernels(p->context, p->kernels);
    p->folding = p->kernels;
    if (st == RN_OK && iface->register_folding != NULL &&
        (st = plugin_kernel_registry_create(&p->folding)) == RN_OK)
        st = iface->register_folding(p->folding);
    if (st == RN_OK && iface->default_context == NULL)
        st = plugin_host_context_create(&iface->context_kind, NULL, 0, &p->default_context);
    pthread_mutex_init(&p->lock, NULL);
    if (st != RN_OK) {
        plugin_device_destroy(p);
        return st;
    }
    plugin_properties_default(&p->props);
    plugin_property_defaults(iface->own_keys, iface->n_own_keys, p->own, iface->own_size);
    if (iface->defaults != NULL)
        iface->defaults(p->context, &p->props, p->own);
    if (iface->read == NULL || iface->read(p->context, NULL, "DEVICE_ARCHITECTURE", p->architecture,
                                           sizeof p->architecture) != RN_OK)
        snprintf(p->architecture, sizeof p->architecture, "%s", iface->info.architecture);
    rn_clear_error();
    *out = p;
    return RN_OK;
}

void plugin_device_destroy(plugin_device *p)
{
    if (p == NULL)
        return;
    if (p->folding != p->kernels)
        plugin_kernel_registry_free(p->folding);
    plugin_kernel_registry_free(p->kernels);
    plugin_host_context_free(p->default_context);
    if (p->iface->close != NULL)
        p->iface->close(p->context);
    pthread_mutex_destroy(&p->lock);
    free(p->own);
    free(p);
}

rn_status plugin_device_create_context(plugin_device *p, const rn_property *params, size_t n,
                                       const rn_remote_context_ops **ops, rn_plugin_context **out)
{
    if (p->iface->create_context != NULL)
        return p->iface->create_context(p->context, params, n, ops, out);
    *ops = plugin_host_context_ops_of(&p->iface->context_kind);
    return plugin_host_context_create(&p->iface->context_kind, params, n, out);
}

rn_status plugin_device_default_context(plugin_device *p, const rn_remote_context_ops **ops,
                                        rn_plugin_context **out)
{
    if (p->iface->default_context != NULL)
        return p->iface->default_context(p->context, ops, out);
    *ops = plugin_host_context_ops_of(&p->iface->context_kind);
    *out = p->default_context;
    return RN_OK;
}

rn_status plugin_device_add_extension(plugin_device *p, const rn_kernel_list *kernels)
{
    pthread_mutex_lock(&p->lock);
    rn_status st = plugin_kernel_registry_add_versioned(p->kernels, kernels);
    pthread_mutex_unlock(&p->lock);
    return st;
}

rn_status plugin_device_set_property(plugin_device *p, const rn_property *props, size_t n)
{
    pthread_mutex_lock(&p->lock);
    rn_status st = apply(p, &p->props, p->own, props, n);
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < n && st == RN_OK; i++)
        if (listed(p->iface->extra_rw_keys, props[i].key))
            st = p->iface->set_property(p->context, props[i].key, props[i].value);
    return st;
}

/* A device property as device `id` (NULL: the default) answers it. */
static rn_status device_property(plugin_device *p, const char *id, const char *key, char *buf,
                                 size_t size)
{
    const plugin_device_iface *iface = p->iface;
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0) {
        key_list l = {.used = 0};
        list_table(&l, &p->props, PLUGIN_SCOPE_DEVICE, false, false);
        list_add_all(&l, iface->ro_keys);
        list_table(&l, &p->props, PLUGIN_SCOPE_DEVICE, true, false);
        list_add_all(&l, iface->extra_rw_keys);
        list_own(&l, iface);
        list_table(&l, &p->props, PLUGIN_SCOPE_DEVICE, true, true);
        return list_result(key, &l, buf, size);
    }
    rn_status st;
    if (iface->read != NULL && (st = iface->read(p->context, id, key, buf, size)) != RN_NOT_FOUND)
        return st;
    return read_values(iface, PLUGIN_SCOPE_DEVICE, &p->lock, &p->props, p->own, key, buf, size);
}

rn_status plugin_device_get_property(plugin_device *p, const char *key, char *buf, size_t size)
{
    return device_property(p, NULL, key, buf, size);
}

rn_status plugin_device_get_device_property(plugin_device *p, const char *id, const char *key,
                                            char *buf, size_t size)
{
    rn_status st = check_id(p, id);
    return st != RN_OK ? st : device_property(p, id, key, buf, size);
}

/* ---- compiled models ---- */

static rn_status compiled_get_property(plugin_compiled *c, const char *key, char *buf, size_t size)
{
    const plugin_device_iface *iface = c->device->iface;
    char tmp[32];
    if (plugin_plan_get_property(c->plan, key, buf, size) == RN_OK)
        return RN_OK;
    rn_clear_error();
    rn_status st;
    const plugin_property_def *d = plugin_property_find(plugin_property_table, PLUGIN_N_KEYS, key);
    switch (d != NULL ? (plugin_key)(d - plugin_property_table) : PLUGIN_N_KEYS) {
    case PLUGIN_KEY_SUPPORTED_PROPERTIES: {
        key_list l = {.used = 0};
        list_table(&l, &c->props, PLUGIN_SCOPE_COMPILED, false, false);
        list_add_all(&l, iface->compiled_ro_keys);
        list_add_all(&l, plugin_plan_property_keys);
        list_table(&l, &c->props, PLUGIN_SCOPE_COMPILED, true, false);
        list_own(&l, iface);
        return list_result(key, &l, buf, size);
    }
    case PLUGIN_KEY_NETWORK_NAME:
        return plugin_property_string(key, c->network_name, buf, size);
    case PLUGIN_KEY_OPTIMAL_NUMBER_OF_INFER_REQUESTS:
        snprintf(tmp, sizeof tmp, "%u", c->optimal_requests);
        return plugin_property_string(key, tmp, buf, size);
    default:
        break;
    }
    if (iface->compiled_read != NULL &&
        (st = iface->compiled_read(c, key, buf, size)) != RN_NOT_FOUND)
        return st;
    return read_values(iface, PLUGIN_SCOPE_COMPILED, &c->lock, &c->props, c->own, key, buf, size);
}

/* The LIVE keys: the shared ones and the device's own; any other key is
 * fixed at compile time or unknown (plugin_properties_set_compiled). */
static rn_status compiled_set_property(plugin_compiled *c, const rn_property *props, size_t n)
{
    const plugin_device_iface *iface = c->device->iface;
    pthread_mutex_lock(&c->lock);
    plugin_properties tmp = c->props;
    void *tmp_own;
    rn_status st = own_copy(c->own, iface->own_size, &tmp_own)
                       ? RN_OK
                       : rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", iface->info.name);
    bool own_changed = false;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        const plugin_property_def *d = props[i].key ? own_row(iface, props[i].key) : NULL;
        if (d != NULL && d->access == PLUGIN_PROPERTY_LIVE) {
            st = plugin_property_parse(d, tmp_own, props[i].value, &tmp);
            own_changed = true;
        } else if (d != NULL)
            st = rn_set_error(RN_INVALID_ARG,
                              "property %s is fixed when the model is compiled (compile again "
                              "to change it)",
                              props[i].key);
        else
            st = plugin_properties_set_compiled(&tmp, &props[i], 1);
    }
    if (st == RN_OK) {
        c->props = tmp;
        if (iface->own_size > 0)
            memcpy(c->own, tmp_own, iface->own_size);
        plugin_plan_set_profiling(c->plan, c->props.enable_profiling);
        plugin_plan_set_log_level(c->plan, c->props.log_level);
        if (own_changed && iface->compiled_changed != NULL)
            iface->compiled_changed(c);
    }
    pthread_mutex_unlock(&c->lock);
    free(tmp_own);
    return st;
}

static rn_status compiled_create_request(plugin_compiled *c, rn_infer_request *owner,
                                         rn_plugin_request **out)
{
    return plugin_request_create(c->plan, owner, out);
}

static rn_status compiled_pipeline(plugin_compiled *c, const rn_pipeline_stage **stages,
                                   size_t *count)
{
    return plugin_plan_pipeline(c->plan, stages, count);
}

static rn_status compiled_runtime_model(plugin_compiled *c, const rn_runtime_node **nodes,
                                        size_t *count)
{
    return plugin_plan_runtime_model(c->plan, nodes, count);
}

static rn_status compiled_export(plugin_compiled *c, void **data, size_t *size)
{
    pthread_mutex_lock(&c->lock);
    plugin_properties props = c->props;
    pthread_mutex_unlock(&c->lock);
    const plugin_device *p = c->device;
    if (p->iface->export_blob != NULL)
        return p->iface->export_blob(c, &props, data, size);
    return plugin_export(c->plan, p->iface->info.name, p->architecture, &props, data, size);
}

static rn_status compiled_write_trace(plugin_compiled *c, const char *path)
{
    rn_status st = plugin_plan_write_trace(c->plan, path);
    if (st == RN_OK && c->device->iface->write_trace != NULL)
        st = c->device->iface->write_trace(c, path);
    return st;
}

static void compiled_free(plugin_compiled *c)
{
    if (c == NULL)
        return;
    plugin_plan_free(c->plan);
    if (c->device->iface->unplace != NULL)
        c->device->iface->unplace(c);
    pthread_mutex_destroy(&c->lock);
    free(c->own);
    free(c);
}

static const rn_compiled_model_ops compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = compiled_create_request,
    .request_ops = &plugin_generic_request_ops,
    .get_property = compiled_get_property,
    .export_model = compiled_export,
    .write_trace = compiled_write_trace,
    .get_runtime_model = compiled_runtime_model,
    .set_property = compiled_set_property,
    .get_pipeline = compiled_pipeline,
    .free = compiled_free,
};

/* ---- compile ---- */

/* The compile-time pipeline (transforms/) on a clone of `model`: every
 * pass, then the device's own (its fusions), unless DISABLE_TRANSFORMATIONS,
 * which keeps only preprocessing (it changes what the user feeds, so it is
 * not an optimisation). Constant folding evaluates on the host with the
 * folding registry. An untransformed device gets the clone. */
rn_status plugin_device_transform(const plugin_device *p, const plugin_properties *props,
                                  const graph *model, graph **out)
{
    graph *g;
    rn_status st = graph_clone(model, &g);
    if (st != RN_OK || p->iface->untransformed) {
        *out = g;
        return st;
    }
    /* Weights are held in memory anyway: fold tensors up to 1 GiB, which
     * covers the fully connected layers of VGG and AlexNet. */
    transforms_options o = {.const_eval = plugin_const_eval,
                            .const_eval_ctx = p->folding,
                            .fold_max_tensor_bytes = (size_t)1 << 30};
    transforms_pipeline *tp = NULL;
    st = transforms_default_pipeline(&o, &tp);
    if (st == RN_OK && p->iface->add_passes != NULL)
        st = p->iface->add_passes(p->context, tp, props);
    if (st == RN_OK && props->disable_transformations)
        st = transforms_pipeline_configure(tp, "-*,+add_preprocessing");
    if (st == RN_OK)
        st = transforms_pipeline_run(tp, g, NULL);
    if (st == RN_OK && p->iface->infer_shapes)
        st = graph_infer_shapes(g);
    transforms_pipeline_free(tp);
    if (st != RN_OK) {
        graph_free(g);
        return st;
    }
    *out = g;
    return RN_OK;
}

/* Marks what the device refuses (the fused names of refused nodes). */
static void mark_refused(const plugin_device *p, const void *own, const graph *model,
                         plugin_query_result *q)
{
    for (int i = 0; i < model->n_nodes; i++) {
        const graph_node *n = model->nodes[i];
        if (p->iface->refuses(own, n->op_type) == NULL)
            continue;
        for (int f = 0; f < n->n_fused; f++)
            for (size_t e = 0; e < q->count; e++)
                if (strcmp(q->names[e], n->fused_names[f]) == 0)
                    q->supported[e] = false;
    }
}

rn_status plugin_device_query(plugin_device *p, const rn_graph *model, const rn_property *props,
                              size_t n, char ***names, bool **supported, size_t *count)
{
    const plugin_device_iface *iface = p->iface;
    void *own;
    pthread_mutex_lock(&p->lock);
    plugin_properties shared = p->props;
    bool copied = own_copy(p->own, iface->own_size, &own);
    pthread_mutex_unlock(&p->lock);
    if (!copied)
        return rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", iface->info.name);
    rn_status st = apply(p, &shared, own, props, n);
    graph *g = NULL;
    plugin_query_result q;
    if (st == RN_OK && iface->untransformed)
        st = plugin_query_model(model, p->kernels, &q);
    else if (st == RN_OK && (st = plugin_device_transform(p, &shared, model, &g)) == RN_OK)
        st = plugin_query_model_transformed(model, g, p->kernels, &q);
    graph_free(g);
    if (st == RN_OK && iface->refuses != NULL)
        mark_refused(p, own, model, &q);
    free(own);
    if (st != RN_OK)
        return st;
    *names = q.names;
    *supported = q.supported;
    *count = q.count;
    return RN_OK;
}

/* A plan specialised for concrete input shapes: fold what they decide
 * (Shape, Size and the shape arithmetic they feed) on the host, then drop
 * what no result needs; kernels prepared in this thread are set up as the
 * device's enter says. */
static rn_status fold_shapes(const plugin_kernel_registry *folding, graph *g)
{
    transforms_fold_options fold = {.eval = plugin_const_eval,
                                    .eval_ctx = (void *)folding,
                                    .max_tensor_bytes = (size_t)1 << 30};
    int changes = 0;
    rn_status st = transforms_fold_constants(g, &fold, &changes);
    if (st == RN_OK && changes > 0)
        st = transforms_eliminate_dead_nodes(g, NULL, &changes);
    return st;
}

/* Under DISABLE_TRANSFORMATIONS a device that lowers from inferred shapes
 * still gets them (plugin_plan_spec_for infers before the hook), and
 * nothing folded. */
static rn_status specialize_shapes_only(void *ctx, graph *g)
{
    (void)ctx, (void)g;
    return RN_OK;
}

static rn_status specialize(void *ctx, graph *g)
{
    plugin_compiled *c = ctx;
    plugin_plan_options options = c->options;
    if (c->device->iface->enter != NULL)
        c->device->iface->enter(c, &options);
    return fold_shapes(c->device->folding, g);
}

rn_status plugin_specialize_at_one(const graph *model, const plugin_kernel_registry *folding,
                                   bool fold, graph **out)
{
    graph_shape *shapes = calloc((size_t)model->n_inputs + 1, sizeof *shapes);
    if (shapes == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    for (int i = 0; i < model->n_inputs; i++) {
        shapes[i] = model->inputs[i]->shape;
        for (int d = 0; d < shapes[i].rank; d++)
            if (shapes[i].dims[d] < 0)
                shapes[i].dims[d] = 1;
    }
    graph *g = NULL;
    rn_status st = plugin_graph_with_shapes(model, shapes, &g);
    free(shapes);
    if (st == RN_OK && (st = graph_infer_shapes(g)) == RN_OK && fold)
        st = fold_shapes(folding, g);
    if (st != RN_OK) {
        graph_free(g);
        return rn_wrap_error(st, "specialising the model with its dynamic dims 1: ");
    }
    *out = g;
    return RN_OK;
}

/* The device's check of the model as a run would specialise it (the base
 * plan of a model with dynamic inputs never runs): with every dynamic input
 * dim 1. Skipped when an input's rank is unknown. */
static rn_status check_specialized(plugin_compiled *c)
{
    const graph *g = plugin_plan_graph(c->plan);
    if (c->device->iface->check_specialized == NULL || !plugin_graph_has_dynamic_inputs(g))
        return RN_OK;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i]->kind == GRAPH_KIND_TENSOR && g->inputs[i]->shape.rank < 0)
            return RN_OK;
    graph *one;
    rn_status st =
        plugin_specialize_at_one(g, c->device->folding, !c->props.disable_transformations, &one);
    if (st == RN_OK)
        st = c->device->iface->check_specialized(c, one);
    graph_free(one);
    return st;
}

/* Builds the plan of a transformed graph (taken over: the plan keeps it,
 * and frees it on failure) with the compiled model's properties. */
static rn_status build(plugin_compiled *c, graph *g)
{
    const plugin_device *p = c->device;
    const plugin_device_iface *iface = p->iface;
    for (int i = 0; iface->refuses != NULL && i < g->n_nodes; i++) {
        const char *why = iface->refuses(c->own, g->nodes[i]->op_type);
        if (why != NULL) {
            rn_status st =
                rn_set_error(RN_UNSUPPORTED, "%s: node '%s' (op %s) is refused by %s",
                             iface->info.name, g->nodes[i]->name, g->nodes[i]->op_type, why);
            graph_free(g);
            return st;
        }
    }
    plugin_plan_options o = {
        .profiling = c->props.enable_profiling,
        .trace = c->props.enable_trace,
        .context = c->context,
        .device = iface->info.name,
        .log_level = c->props.log_level,
        .stage_ctx = c,
        .specialize = !iface->specializes                 ? NULL
                      : !c->props.disable_transformations ? specialize
                      : iface->infer_shapes               ? specialize_shapes_only
                                                          : NULL,
        .specialize_ctx = c,
    };
    plugin_properties_streams(&c->props, executors_cpu_count(), &o.n_streams, &o.threads_per_stream,
                              &c->optimal_requests);
    rn_status st = iface->plan != NULL ? iface->plan(c, &o) : RN_OK;
    if (st != RN_OK) {
        graph_free(g);
        return st;
    }
    c->options = o;
    if (iface->enter != NULL)
        iface->enter(c, &o);
    snprintf(c->network_name, sizeof c->network_name, "%s", g->name);
    st = plugin_plan_build_owned(g, p->kernels, &o, &c->plan);
    if (st == RN_OK)
        st = check_specialized(c);
    return iface->built != NULL ? iface->built(c, st) : st;
}

/* A compiled model with the device's values; NULL when out of memory. */
static plugin_compiled *compiled_new(plugin_device *p)
{
    plugin_compiled *c = calloc(1, sizeof *c);
    if (c == NULL) {
        rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", p->iface->info.name);
        return NULL;
    }
    c->device = p;
    pthread_mutex_lock(&p->lock);
    c->props = p->props;
    bool copied = own_copy(p->own, p->iface->own_size, &c->own);
    pthread_mutex_unlock(&p->lock);
    if (!copied) {
        free(c);
        rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", p->iface->info.name);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

/* Where c runs: the device's place, else `requested` or the default. */
static rn_status place(plugin_compiled *c, rn_plugin_context *requested)
{
    if (c->device->iface->place != NULL)
        return c->device->iface->place(c, requested);
    c->context = requested != NULL ? requested : c->device->default_context;
    return RN_OK;
}

rn_status plugin_device_compile(plugin_device *p, const rn_graph *model, rn_plugin_context *context,
                                const rn_property *props, size_t n,
                                const rn_compiled_model_ops **ops, plugin_compiled **out)
{
    plugin_compiled *c = compiled_new(p);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    rn_status st = apply(p, &c->props, c->own, props, n);
    if (st == RN_OK)
        st = place(c, context);
    graph *g = NULL;
    if (st == RN_OK)
        st = plugin_device_transform(p, &c->props, model, &g);
    if (st == RN_OK)
        st = build(c, g); /* takes g over */
    if (st != RN_OK) {
        compiled_free(c);
        return st;
    }
    *ops = &compiled_ops;
    *out = c;
    return RN_OK;
}

/* Splits an import's properties: the device's own keys apply to c, the
 * rest go to the blob's reader (into *shared, malloc'ed). */
static rn_status split_own(plugin_compiled *c, const rn_property *props, size_t n,
                           rn_property **shared, size_t *n_shared)
{
    const plugin_device *p = c->device;
    *n_shared = 0;
    *shared = calloc(n + 1, sizeof **shared);
    if (*shared == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", p->iface->info.name);
    rn_status st = RN_OK;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        if (props[i].key == NULL || props[i].value == NULL)
            st = rn_set_error(RN_INVALID_ARG, "%s: property %zu has no key or value",
                              p->iface->info.name, i);
        else if (own_row(p->iface, props[i].key) != NULL)
            st = apply(p, &c->props, c->own, &props[i], 1);
        else if (strcmp(props[i].key, "DEVICE_ID") == 0 &&
                 (st = check_id(p, props[i].value)) != RN_OK)
            break;
        else
            (*shared)[(*n_shared)++] = props[i];
    }
    return st;
}

rn_status plugin_device_import(plugin_device *p, const void *data, size_t size,
                               rn_plugin_context *context, const rn_property *props, size_t n,
                               const rn_compiled_model_ops **ops, plugin_compiled **out,
                               const rn_graph **io)
{
    const plugin_device_iface *iface = p->iface;
    plugin_compiled *c = compiled_new(p);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    c->imported = true;
    rn_property *shared = NULL;
    size_t n_shared = 0;
    graph *g = NULL;
    void *pending = NULL;
    rn_status st = split_own(c, props, n, &shared, &n_shared);
    if (st == RN_OK && iface->import_blob != NULL)
        st = iface->import_blob(c, data, size, shared, n_shared, &g, &pending);
    else if (st == RN_OK)
        st = plugin_import(data, size, iface->info.name, p->architecture, shared, n_shared,
                           &c->props, &g);
    free(shared);
    if (st == RN_OK && (st = place(c, context)) != RN_OK)
        graph_free(g);
    if (st == RN_OK) {
        if (iface->import_placed != NULL)
            iface->import_placed(c, pending);
        st = build(c, g); /* the stored graph, already transformed, taken over */
    }
    if (iface->import_done != NULL && pending != NULL)
        iface->import_done(pending);
    if (st != RN_OK) {
        compiled_free(c);
        return st;
    }
    *ops = &compiled_ops;
    *out = c;
    *io = plugin_plan_graph(c->plan);
    return RN_OK;
}
