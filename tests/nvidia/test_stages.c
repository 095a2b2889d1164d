/* NVIDIA_ASYNC_STAGES without a GPU: the property (default NO, parsed,
 * refused for a bad value naming it, listed among the device's keys, not a
 * caching property: it does not change the compiled program), the stage
 * list nv_exec_plan_stages gives the plan (none when off; when on a pending
 * wait with `arm` and a finish stage, both `always`), and those stages on
 * the generic plan's DAG with REF's kernels in place of the program: a run
 * with nothing in flight passes through both, sync, async, several in
 * flight and cancelled; a kernel finds its request and arena
 * (plugin_kernel_request), as NVIDIA's program node does. What they do with a GPU (the callback,
 * the slot handed from the program's node to the finish stage, another run taking a slot in flight)
 * runs on the GPU machine (scripts/nvidia-harness check: nvidia_check with NVIDIA_ASYNC_STAGES NO
 * and YES). */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/device.h"
#include "plugins/api/run.h"
#include "plugins/nvidia/exec.h"
#include "plugins/nvidia/nvidia.h"
#include "plugins/ref/ref.h"
#include "tests/nvidia/same_program.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

Test(nvidia_stages, property_defaults_to_no_parses_and_refuses_bad_values)
{
    nv_test_assert_own_bool("NVIDIA_ASYNC_STAGES", offsetof(nv_properties, own.async_stages),
                            "sometimes");
}

Test(nvidia_stages, is_a_device_key_and_not_a_caching_property)
{
    bool found = false;
    for (int i = 0; i < NV_N_PROPERTY_KEYS; i++)
        found |= strcmp(nv_property_keys[i].key, "NVIDIA_ASYNC_STAGES") == 0;
    cr_assert(found, "NVIDIA_ASYNC_STAGES is among NVIDIA's own keys");
    cr_assert_null(strstr(nv_device_iface.info.caching_properties, "NVIDIA_ASYNC_STAGES"),
                   "the program compiled is the same either way: %s",
                   nv_device_iface.info.caching_properties);
}

Test(nvidia_stages, off_leaves_the_plan_without_device_stages)
{
    plugin_plan_options o = {0};
    nv_exec_plan_stages(&o, false);
    cr_assert_eq(o.n_stages, 0);
}

Test(nvidia_stages, on_adds_a_pending_wait_and_a_finish_that_always_run)
{
    plugin_plan_options o = {0};
    nv_exec_plan_stages(&o, true);
    cr_assert_eq(o.n_stages, 2);
    const plugin_stage *wait = &o.stages[0], *finish = &o.stages[1];
    cr_assert_eq(wait->stage, EXECUTORS_STAGE_WAIT);
    cr_assert_eq(wait->where, EXECUTORS_ON_STREAM, "arming does not block: no device-wait hop");
    cr_assert(wait->arm == nv_exec_stage_arm && wait->run == NULL,
              "the wait is the generic pending event, armed on the run's slot stream");
    cr_assert(wait->always, "the wait drains what a failed or cancelled run left in flight");
    cr_assert_eq(finish->stage, EXECUTORS_STAGE_DOWNLOAD);
    cr_assert_eq(finish->where, EXECUTORS_ON_STREAM);
    cr_assert(finish->run == nv_exec_stage_finish && finish->arm == NULL);
    cr_assert(finish->always, "the slot is given back on every path");
}

/* Host arenas with the run's header, as nv_exec_arena_alloc lays them out
 * (zeroed: nothing in flight), in plain memory. */
static rn_status header_alloc(void *ctx, size_t size, size_t alignment, void **buffer)
{
    (void)ctx, (void)alignment;
    char *base = aligned_alloc(64, (NV_RUN_ARENA_HEADER + size + 63) / 64 * 64);
    if (base == NULL)
        return RN_OUT_OF_MEMORY;
    memset(base, 0, NV_RUN_ARENA_HEADER);
    *buffer = base + NV_RUN_ARENA_HEADER;
    return RN_OK;
}

static void header_free(void *ctx, void *buffer)
{
    (void)ctx;
    free((char *)buffer - NV_RUN_ARENA_HEADER);
}

static const rn_allocator header_arenas = {
    .name = "test-header-host",
    .host = true,
    .alloc = header_alloc,
    .free = header_free,
};

/* The requests of the test in progress, and what a kernel saw of them
 * through plugin_kernel_request: calls, and calls that did not find one
 * of them with an arena. */
static plugin_request *requests[4];
static atomic_int kernel_calls, kernel_misses;

static bool relu_supports(const rn_node *node, const char **why)
{
    (void)node, (void)why;
    return true;
}

/* Relu (f32) that checks that it finds its request: the way NVIDIA's
 * program node finds its run's arena. */
static rn_status relu_run(rn_kernel_args *args)
{
    plugin_request *r = plugin_kernel_request(args);
    bool known = false;
    for (int k = 0; k < 4; k++)
        known |= r != NULL && r == requests[k];
    if (!known || plugin_request_arena(r) == NULL)
        atomic_fetch_add(&kernel_misses, 1);
    atomic_fetch_add(&kernel_calls, 1);
    const float *x = args->inputs[0].data;
    float *y = args->outputs[0].data;
    for (size_t i = 0; i < args->inputs[0].nbytes / sizeof(float); i++)
        y[i] = x[i] > 0 ? x[i] : 0;
    return RN_OK;
}

static const plugin_kernel finding_relu = {
    .domain = "",
    .op_type = "Relu",
    .impl_type = "test",
    .supports = relu_supports,
    .run = relu_run,
};

/* Light SqueezeNet on REF's kernels (Relu: finding_relu) with NVIDIA's
 * async stages: two streams, four requests with an input of zeros each. */
typedef struct staged {
    graph *g;
    plugin_kernel_registry *reg;
    plugin_plan *plan;
    plugin_request *req[4];
    float *input;
} staged;

static void staged_build(staged *s)
{
    memset(s, 0, sizeof *s);
    s->g = nv_test_light("squeezenet");
    OK(plugin_kernel_registry_create(&s->reg));
    OK(plugin_kernel_registry_add(s->reg, &finding_relu));
    OK(ref_register_kernels(s->reg));
    plugin_plan_options o = {.n_streams = 2, .threads_per_stream = 1, .device = "NVIDIA"};
    nv_exec_plan_stages(&o, true);
    o.allocator = &header_arenas;
    OK(plugin_plan_build(s->g, s->reg, &o, &s->plan));
    const graph *pg = plugin_plan_graph(s->plan);
    graph_tensor in = {.type = RN_F32, .kind = RN_KERNEL_TENSOR};
    const graph_value *v = pg->inputs[0];
    in.rank = v->shape.rank;
    size_t count = 1;
    for (int d = 0; d < in.rank; d++) {
        in.dims[d] = v->shape.dims[d] > 0 ? v->shape.dims[d] : 1;
        count *= (size_t)in.dims[d];
    }
    s->input = calloc(count, sizeof(float));
    cr_assert_not_null(s->input);
    in.data = s->input;
    in.nbytes = count * sizeof(float);
    for (int k = 0; k < 4; k++) {
        OK(plugin_request_create(s->plan, NULL, &s->req[k]));
        OK(plugin_request_set_input(s->req[k], 0, &in));
        requests[k] = s->req[k];
    }
    atomic_store(&kernel_calls, 0);
    atomic_store(&kernel_misses, 0);
}

static void staged_free(staged *s)
{
    for (int k = 0; k < 4; k++)
        plugin_request_free(s->req[k]);
    plugin_plan_free(s->plan);
    plugin_kernel_registry_free(s->reg);
    graph_free(s->g);
    free(s->input);
}

Test(nvidia_stages, are_nodes_of_the_request_pipeline_after_infer)
{
    staged s;
    staged_build(&s);
    const rn_pipeline_stage *st;
    size_t n;
    OK(plugin_plan_pipeline(s.plan, &st, &n));
    int infer = -1, wait = -1, download = -1;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(st[i].stage, "infer") == 0)
            infer = (int)i;
        else if (strcmp(st[i].stage, "wait") == 0)
            wait = (int)i;
        else if (strcmp(st[i].stage, "download") == 0)
            download = (int)i;
    }
    cr_assert(infer >= 0 && wait > infer && download > wait,
              "infer (%d), then wait (%d), then download (%d)", infer, wait, download);
    cr_assert_str_eq(st[wait].executor, "stream");
    cr_assert_str_eq(st[download].executor, "stream");
    staged_free(&s);
}

Test(nvidia_stages, pass_a_run_with_nothing_in_flight_sync_async_and_cancelled)
{
    staged s;
    staged_build(&s);
    OK(plugin_request_infer(s.req[0]));
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 4; k++)
            OK(plugin_request_start_async(s.req[k]));
        for (int k = 0; k < 4; k++)
            OK(plugin_run_op_wait(s.req[k]));
    }
    /* Cancelled as soon as started: the always stages still run, and the
     * request is usable after. */
    OK(plugin_request_start_async(s.req[1]));
    OK(plugin_request_cancel(s.req[1]));
    rn_status st = plugin_run_op_wait(s.req[1]);
    cr_assert(st == RN_OK || st == RN_CANCELLED, "%s: %s", rn_status_name(st), rn_last_error());
    OK(plugin_request_infer(s.req[1]));
    graph_tensor a, b;
    OK(plugin_request_get_output(s.req[0], 0, &a));
    OK(plugin_request_get_output(s.req[1], 0, &b));
    cr_assert_eq(a.nbytes, b.nbytes);
    cr_assert_eq(memcmp(a.data, b.data, a.nbytes), 0, "same input, same output");
    /* Every kernel call found its own request (one of the four) and its
     * arena, on whichever thread it ran. */
    cr_assert_gt(atomic_load(&kernel_calls), 0, "the test's Relu ran");
    cr_assert_eq(atomic_load(&kernel_misses), 0, "%d of %d calls did not find their request",
                 atomic_load(&kernel_misses), atomic_load(&kernel_calls));
    staged_free(&s);
}

Test(nvidia_stages, arm_with_nothing_queued_is_done_at_once)
{
    char *base = calloc(1, NV_RUN_ARENA_HEADER + 64);
    cr_assert_not_null(base);
    /* No slot in the record: nothing to wait for, and no CUDA call. */
    cr_assert_eq(nv_exec_stage_arm(base + NV_RUN_ARENA_HEADER, NULL), RN_OK);
    free(base);
}
