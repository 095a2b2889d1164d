/* Statistics, model configuration and repository index as JSON (see
 * extension.h). */
#include "server/extension.h"

#include <stdio.h>
#include <string.h>

static json_t *duration(uint64_t count, uint64_t ns)
{
    return json_pack("{s:I, s:I}", "count", (json_int_t)count, "ns", (json_int_t)ns);
}

typedef struct stats_pass {
    const char *model, *version;
    json_t *list;
} stats_pass;

static void add_stats(server_model *m, void *user)
{
    stats_pass *p = user;
    if ((*p->model && strcmp(server_model_name(m), p->model) != 0) ||
        (*p->version && strcmp(server_model_version_text(m), p->version) != 0))
        return;
    server_statistics s;
    server_model_statistics(m, &s);
    json_t *infer = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o}", "success", duration(s.success_count, s.success_ns),
        "fail", duration(s.fail_count, s.fail_ns), "queue", duration(s.ran, s.queue_ns),
        "compute_input", duration(s.ran, s.input_ns), "compute_infer", duration(s.ran, s.infer_ns),
        "compute_output", duration(s.ran, s.output_ns));
    json_array_append_new(
        p->list,
        json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:[]}", "name", server_model_name(m), "version",
                  server_model_version_text(m), "last_inference", (json_int_t)s.last_ms,
                  "inference_count", (json_int_t)s.inference_count, "execution_count",
                  (json_int_t)s.execution_count, "inference_stats", infer, "batch_stats"));
}

json_t *server_statistics_json(server_registry *r, const char *model, const char *version)
{
    if (*model) {
        server_model *m = server_registry_find(r, model, version);
        if (m == NULL)
            return NULL;
        server_model_release(m);
    }
    stats_pass p = {model, version, json_array()};
    server_registry_foreach(r, add_stats, &p);
    return json_pack("{s:o}", "model_stats", p.list);
}

const char *server_config_type_name(rn_element_type type)
{
    static const char *const names[][2] = {
        {"BOOL", "TYPE_BOOL"},     {"UINT8", "TYPE_UINT8"},   {"UINT16", "TYPE_UINT16"},
        {"UINT32", "TYPE_UINT32"}, {"UINT64", "TYPE_UINT64"}, {"INT8", "TYPE_INT8"},
        {"INT16", "TYPE_INT16"},   {"INT32", "TYPE_INT32"},   {"INT64", "TYPE_INT64"},
        {"FP16", "TYPE_FP16"},     {"FP32", "TYPE_FP32"},     {"FP64", "TYPE_FP64"},
        {"BYTES", "TYPE_STRING"},  {"BF16", "TYPE_BF16"},
    };
    const char *name = server_datatype_name(type);
    for (size_t i = 0; name && i < sizeof names / sizeof *names; i++)
        if (strcmp(names[i][0], name) == 0)
            return names[i][1];
    return "TYPE_INVALID";
}

static json_t *config_tensor(const rn_port *p, size_t skip)
{
    json_t *dims = json_array();
    size_t rank = p->shape.rank > 0 ? (size_t)p->shape.rank : 0;
    for (size_t d = rank >= skip ? skip : 0; d < rank; d++)
        json_array_append_new(dims, json_integer(p->shape.dims[d]));
    if (p->shape.rank < 0)
        json_array_append_new(dims, json_integer(-1));
    return json_pack("{s:s, s:s, s:o}", "name", p->name, "data_type",
                     server_config_type_name(p->element_type), "dims", dims);
}

json_t *server_config_json(const server_model *m)
{
    size_t batch = server_model_max_batch_size(m), skip = batch > 0 ? 1 : 0, n_pref;
    const size_t *pref = server_model_preferred(m, &n_pref);
    json_t *inputs = json_array(), *outputs = json_array();
    rn_port port;
    for (size_t i = 0; i < server_model_input_count(m); i++)
        if (server_model_input(m, i, &port) == RN_OK)
            json_array_append_new(inputs, config_tensor(&port, skip));
    for (size_t i = 0; i < server_model_output_count(m); i++)
        if (server_model_output(m, i, &port) == RN_OK)
            json_array_append_new(outputs, config_tensor(&port, skip));
    json_t *config =
        json_pack("{s:s, s:s, s:s, s:I, s:o, s:o}", "name", server_model_name(m), "platform",
                  server_model_is_pipeline(m) ? "ensemble" : "onnx", "backend", "runnel",
                  "max_batch_size", (json_int_t)batch, "input", inputs, "output", outputs);
    /* Where it runs, as the device answers (HETERO's devices with nodes,
     * AUTO's current choice), in Triton's parameters form. */
    const rn_compiled_model *compiled = server_model_compiled(m);
    char devices[256];
    if (compiled != NULL && rn_compiled_model_get_property(compiled, "EXECUTION_DEVICES", devices,
                                                           sizeof devices) == RN_OK)
        json_object_set_new(config, "parameters",
                            json_pack("{s:{s:s}}", "execution_devices", "string_value", devices));
    if (batch > 0) {
        json_t *preferred = json_array();
        for (size_t i = 0; i < n_pref; i++)
            json_array_append_new(preferred, json_integer((json_int_t)pref[i]));
        json_object_set_new(config, "dynamic_batching",
                            json_pack("{s:o, s:I}", "preferred_batch_size", preferred,
                                      "max_queue_delay_microseconds",
                                      (json_int_t)server_model_queue_delay_us(m)));
    }
    return config;
}

static void add_index_entry(const char *name, const char *version, const char *state,
                            const char *reason, void *user)
{
    json_array_append_new(user, json_pack("{s:s, s:s, s:s, s:s}", "name", name, "version", version,
                                          "state", state, "reason", reason));
}

json_t *server_index_json(server_registry *r, int ready_only)
{
    json_t *list = json_array();
    server_registry_index(r, ready_only, add_index_entry, list);
    return list;
}
