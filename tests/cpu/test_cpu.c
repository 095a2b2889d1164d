/* The CPU device (oneDNN) through the public API: it is the default
 * device; its precision follows the CPU's ISA as OpenVINO's does; its
 * properties are checked; the light models compile to fused oneDNN
 * primitives with blocked layouts between them and few conversions; its
 * outputs agree with REF's in f32 and stay close in bf16; concurrent
 * requests on several streams give the same outputs as one sync request. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "tests/cpu/cpu_testing.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* Whether /proc/cpuinfo lists a flag. */
static bool cpu_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        for (char *t = strtok(line, " \t\n"); t != NULL && !found; t = strtok(NULL, " \t\n"))
            found = strcmp(t, flag) == 0;
    }
    fclose(f);
    return found;
}

/* Whether oneDNN may dispatch to `level` here: ONEDNN_MAX_CPU_ISA (or its
 * older name DNNL_MAX_CPU_ISA) caps what the CPU has (scripts/test runs the
 * CPU tests capped to AVX2 on AVX-512 machines). */
static bool isa_allows(const char *level)
{
    static const char *const order[] = {"SSE41",
                                        "AVX",
                                        "AVX2",
                                        "AVX2_VNNI",
                                        "AVX512_CORE",
                                        "AVX512_CORE_VNNI",
                                        "AVX512_CORE_BF16",
                                        "AVX512_CORE_AMX"};
    const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
    if (cap == NULL || cap[0] == '\0')
        cap = getenv("DNNL_MAX_CPU_ISA");
    if (cap == NULL || cap[0] == '\0' || strcasecmp(cap, "ALL") == 0)
        return true;
    int c = -1, l = -1;
    for (int i = 0; i < (int)(sizeof order / sizeof order[0]); i++) {
        if (strcasecmp(cap, order[i]) == 0)
            c = i;
        if (strcmp(level, order[i]) == 0)
            l = i;
    }
    return c < 0 || c >= l;
}

/* Whether the CPU runs bf16 natively and oneDNN may use it here. */
static bool native_bf16(void)
{
    return (cpu_flag("avx512_bf16") || cpu_flag("amx_bf16")) && isa_allows("AVX512_CORE_BF16");
}

Test(cpu, is_the_first_device)
{
    rn_core *core;
    OK(rn_core_create(&core));
    cr_assert(rn_core_device_count(core) >= 2);
    cr_assert_str_eq(rn_core_device_name(core, 0), "CPU");
    char buf[256];
    OK(rn_core_get_property(core, "CPU", "FULL_DEVICE_NAME", buf, sizeof buf));
    cr_assert(strstr(buf, "oneDNN") != NULL, "%s", buf);
    rn_core_free(core);
}

Test(cpu, precision_follows_the_isa)
{
    rn_core *core;
    OK(rn_core_create(&core));
    char buf[64];
    OK(rn_core_get_property(core, "CPU", "INFERENCE_PRECISION_HINT", buf, sizeof buf));
    bool bf16 = native_bf16();
    cr_assert_str_eq(buf, bf16 ? "bf16" : "f32",
                     "native bf16 (avx512_bf16 or amx_bf16, not capped) %s",
                     bf16 ? "present" : "absent");
    rn_core_free(core);
}

/* The compiled model's INFERENCE_PRECISION_HINT for these properties. */
static void expect_compiled_precision(rn_core *core, rn_model *model, const rn_property *p,
                                      size_t n, const char *expect)
{
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, "CPU", p, n, &cm));
    char buf[64];
    OK(rn_compiled_model_get_property(cm, "INFERENCE_PRECISION_HINT", buf, sizeof buf));
    cr_assert_str_eq(buf, expect, "%zu properties, the first %s=%s", n, n ? p[0].key : "-",
                     n ? p[0].value : "-");
    rn_compiled_model_free(cm);
}

/* OpenVINO's rule: EXECUTION_MODE_HINT ACCURACY runs at f32 where the
 * default is bf16, unless INFERENCE_PRECISION_HINT is set too (in either
 * order); PERFORMANCE gives the default back. */
Test(cpu, accuracy_mode_runs_f32_unless_the_precision_is_set)
{
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, "tests/cpu/conv_relu_transpose.onnx", &model));
    const char *deflt = native_bf16() ? "bf16" : "f32";
    rn_property acc = {"EXECUTION_MODE_HINT", "ACCURACY"};
    rn_property perf = {"EXECUTION_MODE_HINT", "PERFORMANCE"};
    rn_property bf16 = {"INFERENCE_PRECISION_HINT", "bf16"};
    expect_compiled_precision(core, model, NULL, 0, deflt);
    expect_compiled_precision(core, model, &acc, 1, "f32");
    expect_compiled_precision(core, model, (rn_property[]){acc, bf16}, 2, deflt);
    expect_compiled_precision(core, model, (rn_property[]){bf16, acc}, 2, deflt);
    expect_compiled_precision(core, model, (rn_property[]){acc, perf}, 2, deflt);
    /* Set on the device, it holds for every compile that does not say. */
    OK(rn_core_set_property(core, "CPU", &acc, 1));
    char buf[64];
    OK(rn_core_get_property(core, "CPU", "INFERENCE_PRECISION_HINT", buf, sizeof buf));
    cr_assert_str_eq(buf, "f32");
    expect_compiled_precision(core, model, NULL, 0, "f32");
    expect_compiled_precision(core, model, &bf16, 1, deflt);
    rn_model_free(model);
    rn_core_free(core);
}

/* What the device says about the machine: the ISA oneDNN dispatches to,
 * the processor in FULL_DEVICE_NAME, BF16 among the capabilities only where
 * it is native (as OpenVINO's CPU plugin), and CPU_ISA in
 * SUPPORTED_PROPERTIES. */
Test(cpu, describes_the_machine)
{
    rn_core *core;
    OK(rn_core_create(&core));
    char isa[64], name[512], caps[256], keys[4096];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    OK(rn_core_get_property(core, "CPU", "FULL_DEVICE_NAME", name, sizeof name));
    OK(rn_core_get_property(core, "CPU", "OPTIMIZATION_CAPABILITIES", caps, sizeof caps));
    OK(rn_core_get_property(core, "CPU", "SUPPORTED_PROPERTIES", keys, sizeof keys));
    /* CPU_ISA is what oneDNN may use: the processor's flags, capped by
     * ONEDNN_MAX_CPU_ISA when it is set (the suite runs again capped). */
    bool avx512 = cpu_flag("avx512f") && isa_allows("AVX512_CORE");
    bool avx2 = cpu_flag("avx2") && isa_allows("AVX2");
    if (avx512)
        cr_assert(strncmp(isa, "avx512", 6) == 0, "avx512f present, CPU_ISA %s", isa);
    else if (avx2)
        cr_assert(strncmp(isa, "avx2", 4) == 0, "avx2 without avx512f, CPU_ISA %s", isa);
    else
        cr_assert(strncmp(isa, "avx2", 4) != 0 && strncmp(isa, "avx512", 6) != 0,
                  "avx2 absent or capped (ONEDNN_MAX_CPU_ISA %s), CPU_ISA %s",
                  getenv("ONEDNN_MAX_CPU_ISA") ? getenv("ONEDNN_MAX_CPU_ISA") : "unset", isa);
    cr_assert(strstr(name, isa) != NULL, "%s does not name %s", name, isa);
    cr_assert(strstr(name, " on ") != NULL, "%s does not name the processor", name);
    bool bf16 = native_bf16();
    cr_assert_eq(strstr(caps, "BF16") != NULL, bf16, "%s with native bf16 %s", caps,
                 bf16 ? "present" : "absent");
    cr_assert(strstr(caps, "FP32") != NULL && strstr(caps, "INT8") != NULL, "%s", caps);
    cr_assert(strstr(keys, "CPU_ISA") != NULL, "%s", keys);
    /* Read-only: setting it is refused by name. */
    rn_property set = {"CPU_ISA", "avx2"};
    cr_assert_neq(rn_core_set_property(core, "CPU", &set, 1), RN_OK);
    cr_assert(strstr(rn_last_error(), "CPU_ISA") != NULL, "%s", rn_last_error());
    rn_core_free(core);
}

Test(cpu, properties_are_checked)
{
    rn_core *core;
    OK(rn_core_create(&core));
    rn_property f32 = {"INFERENCE_PRECISION_HINT", "f32"};
    OK(rn_core_set_property(core, "CPU", &f32, 1));
    rn_property f16 = {"INFERENCE_PRECISION_HINT", "f16"};
    cr_assert_eq(rn_core_set_property(core, "CPU", &f16, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "f32, bf16") != NULL, "%s", rn_last_error());
    rn_property den = {"CPU_DENORMALS_OPTIMIZATION", "NO"};
    OK(rn_core_set_property(core, "CPU", &den, 1));
    char buf[64];
    OK(rn_core_get_property(core, "CPU", "CPU_DENORMALS_OPTIMIZATION", buf, sizeof buf));
    cr_assert_str_eq(buf, "NO");
    rn_property bad = {"CPU_DENORMALS_OPTIMIZATION", "maybe"};
    cr_assert_eq(rn_core_set_property(core, "CPU", &bad, 1), RN_INVALID_ARG);
    /* A CPU key is not REF's. */
    cr_assert_eq(rn_core_set_property(core, "REF", &den, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "CPU_DENORMALS_OPTIMIZATION") != NULL);
    rn_core_free(core);
}

static rn_compiled_model *compile(rn_core *core, rn_model *model, const char *device,
                                  const char *precision)
{
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", precision}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, device, p, precision != NULL ? 1 : 0, &cm));
    return cm;
}

/* The runtime model: how many nodes of a type, and whether one runs REF. */
static int count_type(rn_compiled_model *cm, const char *type, int *ref_impls)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].layer_type, type) == 0) {
            count++;
            if (ref_impls != NULL && strcmp(nodes[i].impl_type, "ref") == 0)
                (*ref_impls)++;
        }
    }
    return count;
}

/* The model at path compiled for CPU in f32 (core and model to free). */
static rn_compiled_model *compile_f32(const char *path, rn_core **core, rn_model **model)
{
    OK(rn_core_create(core));
    OK(rn_core_read_model(*core, path, model));
    return compile(*core, *model, "CPU", "f32");
}

/* A light model compiled for CPU in f32 (core and model to free). */
static rn_compiled_model *compile_light_f32(const char *name, rn_core **core, rn_model **model)
{
    char path[512];
    cpu_testing_light(name, path, sizeof path);
    return compile_f32(path, core, model);
}

/* A light model read by a new Core (both to free). */
static void read_light(const char *name, rn_core **core, rn_model **model)
{
    char path[512];
    cpu_testing_light(name, path, sizeof path);
    OK(rn_core_create(core));
    OK(rn_core_read_model(*core, path, model));
}

/* INFERENCE_NUM_THREADS of a compiled model is the threads that compute:
 * streams × each stream's OpenMP team, not its one worker per stream. */
static unsigned compiled_threads(rn_core *core, rn_model *model, const char *hint,
                                 const char *threads)
{
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", "f32"},
                       {"PERFORMANCE_HINT", hint},
                       {"INFERENCE_NUM_THREADS", threads}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, "CPU", p, threads != NULL ? 3 : 2, &cm));
    char buf[32];
    OK(rn_compiled_model_get_property(cm, "INFERENCE_NUM_THREADS", buf, sizeof buf));
    rn_compiled_model_free(cm);
    return (unsigned)atoi(buf);
}

Test(cpu, inference_num_threads_counts_the_team, .timeout = 120)
{
    rn_core *core;
    rn_model *model;
    read_light("squeezenet", &core, &model);
    unsigned cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    cr_assert_eq(compiled_threads(core, model, "LATENCY", NULL), cpus,
                 "LATENCY: one stream whose team has every CPU");
    cr_assert_eq(compiled_threads(core, model, "THROUGHPUT", NULL), cpus,
                 "THROUGHPUT: a single-threaded stream per CPU");
    cr_assert_eq(compiled_threads(core, model, "LATENCY", "1"), 1);
    rn_model_free(model);
    rn_core_free(core);
}

/* The plan's layout conversions (PLAN_CONVERSIONS). */
static int conversions(rn_compiled_model *cm)
{
    char buf[64];
    OK(rn_compiled_model_get_property(cm, "PLAN_CONVERSIONS", buf, sizeof buf));
    return atoi(buf);
}

/* Concats in a layout blocked along C written in place (the plan's
 * concat_dense hook): SqueezeNet's 8 Concats of two expand convolutions
 * each, along C with N = 1, are skipped at run time where the convolutions
 * write nChw8c or nChw16c (each writes its slice); DenseNet-121's 58 are a
 * chain, Concat(previous Concat, new Conv), whose previous Concat the next
 * BatchNormalization reads too: that input is placed as well (impl
 * "concat_in_place", not "concat_in_place_partial", which copies the inputs
 * it could not place), so a dense block's Concats are one buffer that every
 * Conv writes its 32 channels into. Which layout the
 * convolutions write is oneDNN's choice for the ISA (nChw8c on AVX2,
 * nChw16c or nhwc on AVX-512), so the test asks the runtime model: a Concat
 * whose inputs all arrive blocked along C must write that layout and run in
 * place, copying nothing. The outputs equal REF's
 * (squeezenet_f32_matches_ref, densenet121_f32_matches_ref, the conformance
 * runner on the light models). */
static bool blocked_along_c(const char *layout)
{
    /* CPU layout names: "aBcd8b" (nChw8c), "aBcd16b", "bf16:aBcd16b". */
    const char *colon = strrchr(layout, ':');
    const char *name = colon != NULL ? colon + 1 : layout;
    return strlen(name) > 1 && name[1] == 'B';
}

/* Whether every comma-separated layout in `list` is blocked along C. */
static bool all_blocked_along_c(const char *list)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    bool any = false;
    for (char *save, *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        if (!blocked_along_c(t))
            return false;
        any = true;
    }
    return any;
}

/* The Concats of a light model compiled at precision whose inputs arrive
 * blocked along C; each of them must be blocked and in place. */
static int expect_concats_in_place(const char *name, const char *precision, int concats_in_model,
                                   char *seen, size_t seen_size)
{
    rn_core *core;
    rn_model *model;
    read_light(name, &core, &model);
    rn_compiled_model *cm = compile(core, model, "CPU", precision);
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int concats = 0, blocked_in = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].layer_type, "Concat") != 0)
            continue;
        concats++;
        snprintf(seen, seen_size, "%s", nodes[i].input_layouts);
        if (!all_blocked_along_c(nodes[i].input_layouts))
            continue;
        blocked_in++;
        cr_assert(blocked_along_c(nodes[i].output_layouts),
                  "%s: Concat '%s' reads %s but writes %s", name, nodes[i].name,
                  nodes[i].input_layouts, nodes[i].output_layouts);
        cr_assert_str_eq(nodes[i].impl_type, "concat_in_place", "%s: Concat '%s' (%s)", name,
                         nodes[i].name, nodes[i].output_layouts);
    }
    cr_assert_eq(concats, concats_in_model, "%s: %d Concats", name, concats);
    cr_log_info("%s: %d of %d Concats read inputs blocked along C, all in place", name, blocked_in,
                concats);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    return blocked_in;
}

/* On AVX2 every one of those Concats is blocked and in place, on oneDNN
 * 2.6 (whose convolutions pick nChw8c) and on 3.x (whose brgconv picks
 * channels-last over "any": the convolutions around the Concats are steered
 * to the block its jit kernels write, plugins/cpu/concat_layout.c). Other
 * ISAs: every Concat read blocked must be in place; none blocked skips,
 * naming what the convolutions write. */
Test(cpu, blocked_concats_are_written_in_place, .timeout = 300)
{
    char seen[256] = "";
    int blocked = expect_concats_in_place("squeezenet", "f32", 8, seen, sizeof seen);
    blocked += expect_concats_in_place("densenet121", "f32", 58, seen, sizeof seen);
    rn_core *core;
    OK(rn_core_create(&core));
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    int major = cpu_testing_onednn_major(core);
    rn_core_free(core);
    if (strncmp(isa, "avx2", 4) == 0)
        cr_assert_eq(blocked, 8 + 58, "oneDNN %d on %s: %d of 66 Concats blocked along C (%s)",
                     major, isa, blocked, seen);
    else if (blocked == 0)
        cr_skip_test("oneDNN %d's convolutions write %s on %s, not a layout blocked along C: no "
                     "Concat can be written in place",
                     major, seen, isa);
}

/* In native bf16 (avx512_bf16, AMX) oneDNN 2.6's brgconv picks
 * channels-last too: the convolutions around the Concats are steered to a
 * block (concat_layout.c), and every Concat is blocked and in place. Where
 * bf16 is not native it computes f32 (the test above). */
Test(cpu, blocked_concats_are_written_in_place_in_native_bf16, .timeout = 300)
{
    rn_core *core;
    OK(rn_core_create(&core));
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    rn_core_free(core);
    if (strstr(isa, "bf16") == NULL && strstr(isa, "amx") == NULL)
        cr_skip_test("oneDNN runs %s here, without native bf16", isa);
    char seen[256] = "";
    int blocked = expect_concats_in_place("squeezenet", "bf16", 8, seen, sizeof seen);
    blocked += expect_concats_in_place("densenet121", "bf16", 58, seen, sizeof seen);
    cr_assert_eq(blocked, 8 + 58, "%s, bf16: %d of 66 Concats blocked along C (%s)", isa, blocked,
                 seen);
}

/* Whether every comma-separated layout in `list` is channels-last ("acdb",
 * "bf16:acdb"). */
static bool all_channels_last(const char *list)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    bool any = false;
    for (char *save, *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        const char *colon = strrchr(t, ':');
        if (strcmp(colon != NULL ? colon + 1 : t, "acdb") != 0)
            return false;
        any = true;
    }
    return any;
}

/* A Concat along C of channels-last parts that is not in place (oneDNN
 * 2.6's brgconv on AVX-512 in f32, 3.x's on AVX2 where not steered) is the
 * device's own copy (nn.c, concat_channels_last), each part's channels of
 * every pixel one run, not oneDNN's generic simple:any concat (pixel by
 * pixel, 1.1-1.6x slower); the outputs are REF's (squeezenet_f32_matches_ref,
 * the Inception-v2 and DenseNet-121 tests). Where no Concat reads
 * channels-last (2.6 on AVX2: in place) it skips. */
Test(cpu, channels_last_concats_are_copied_by_runs, .timeout = 300)
{
    static const char *const models[] = {"squeezenet", "inception_v2", "inception_v1"};
    int channels_last = 0;
    for (int m = 0; m < 3; m++) {
        rn_core *core;
        rn_model *model;
        rn_compiled_model *cm = compile_light_f32(models[m], &core, &model);
        const rn_runtime_node *nodes;
        size_t n;
        OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
        for (size_t i = 0; i < n; i++) {
            if (strcmp(nodes[i].layer_type, "Concat") != 0 ||
                strcmp(nodes[i].impl_type, "concat_in_place") == 0 ||
                !all_channels_last(nodes[i].input_layouts))
                continue;
            channels_last++;
            cr_assert_str_eq(nodes[i].impl_type, "copy:channels_last",
                             "%s: Concat '%s' over %s runs %s", models[m], nodes[i].name,
                             nodes[i].input_layouts, nodes[i].impl_type);
        }
        rn_compiled_model_free(cm);
        rn_model_free(model);
        rn_core_free(core);
    }
    if (channels_last == 0)
        cr_skip_test("no Concat reads channels-last parts here");
    cr_log_info("%d channels-last Concats, each copied by runs of channels", channels_last);
}

/* Whether the device runs Winograd convolutions here: oneDNN 2.x has them
 * for f32 on AVX-512 only (plugins/cpu/conv.c), as its CPU_ISA and
 * FULL_DEVICE_NAME ("runnel CPU device (oneDNN 2.6.3, avx512_core_bf16)
 * ...") say, under ONEDNN_MAX_CPU_ISA too. */
static bool device_has_winograd(void)
{
    rn_core *core;
    OK(rn_core_create(&core));
    char name[256], isa[64];
    OK(rn_core_get_property(core, "CPU", "FULL_DEVICE_NAME", name, sizeof name));
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    rn_core_free(core);
    return strstr(name, "oneDNN 2.") != NULL && strncmp(isa, "avx512", 6) == 0;
}

/* Compiled for CPU in f32 with EXECUTION_MODE_HINT `mode`. */
static rn_compiled_model *compile_f32_mode(rn_core *core, rn_model *model, const char *mode)
{
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", "f32"}, {"EXECUTION_MODE_HINT", mode}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, "CPU", p, 2, &cm));
    return cm;
}

/* Under ACCURACY (direct convolutions only: Winograd's blocked layout would
 * add its own conversions) the layouts flow from primitive to primitive. */
Test(cpu, resnet50_compiles_to_fused_primitives, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    read_light("resnet50", &core, &model);
    rn_compiled_model *cm = compile_f32_mode(core, model, "ACCURACY");
    cr_assert_eq(cpu_testing_winograd_nodes(cm), 0, "Winograd under EXECUTION_MODE_HINT ACCURACY");
    int ref = 0;
    int fused = count_type(cm, "FusedConv", &ref);
    int conv = count_type(cm, "Conv", &ref);
    /* 53 convolutions: every one but the 4 projection shortcuts takes its
     * ReLU (and the residual) along. */
    cr_assert_eq(fused + conv, 53, "%d FusedConv + %d Conv", fused, conv);
    cr_assert_geq(fused, 49);
    cr_assert_eq(ref, 0, "a convolution fell back to REF");
    cr_assert_eq(count_type(cm, "BatchNormalization", NULL), 0, "BatchNormalization not folded");
    cr_assert_eq(count_type(cm, "Relu", NULL), 0, "a ReLU was not fused");
    int n = conversions(cm);
    cr_assert_leq(n, 4, "%d conversions: layouts do not flow between primitives", n);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* Concats whose first input other nodes read too
 * (tests/cpu/make_concat_chain_model.py): c, read by a Conv, is placed in
 * e, the next Concat of the chain (nothing writes over e in place), so both
 * run "concat_in_place"; e, read by a Conv that may still run when the
 * Sigmoid after g writes over g's bytes in place, is copied into g
 * ("concat_in_place_partial", h alone placed). Where the convolutions do
 * not write a layout blocked along C (AVX-512's acdb) the Concats copy: only
 * the values are checked then. All three outputs are onnx's reference
 * evaluator's. */
Test(cpu, concat_chain_places_shared_inputs_only_where_safe)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_f32("tests/cpu/concat_chain.onnx", &core, &model);
    const char *want[][2] = {{"concat_c", "concat_in_place"},
                             {"concat_e", "concat_in_place"},
                             {"concat_g", "concat_in_place_partial"}};
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].layer_type, "Concat") != 0 ||
            !all_blocked_along_c(nodes[i].input_layouts))
            continue;
        for (size_t k = 0; k < 3; k++) {
            if (strcmp(nodes[i].original_names, want[k][0]) != 0)
                continue;
            cr_assert_str_eq(nodes[i].impl_type, want[k][1], "Concat -> %s (%s)", want[k][0],
                             nodes[i].input_layouts);
            checked++;
        }
    }
    cr_log_info("concat_chain: %d of 3 Concats read inputs blocked along C", checked);
    cr_assert(checked == 3 || checked == 0, "%d of the 3 Concats found blocked", checked);
    rn_infer_request *r = cpu_testing_infer(cm);
    float want_y[512 + 512 + 2048];
    FILE *f = fopen("tests/cpu/concat_chain.expected", "rb");
    cr_assert_not_null(f, "tests/cpu/concat_chain.expected");
    size_t got = fread(want_y, sizeof *want_y, sizeof want_y / sizeof *want_y, f);
    fclose(f);
    cr_assert_eq(got, 512 + 512 + 2048, "concat_chain.expected: %zu floats", got);
    size_t off = 0;
    for (size_t o = 0; o < 3; o++) {
        rn_tensor *y;
        OK(rn_infer_request_get_output_tensor(r, o, &y));
        const float *v = rn_tensor_data(y);
        size_t m = rn_tensor_element_count(y);
        cr_assert_eq(m, o < 2 ? 512u : 2048u);
        for (size_t i = 0; i < m; i++)
            cr_assert(fabsf(v[i] - want_y[off + i]) <= 1e-4f + 1e-4f * fabsf(want_y[off + i]),
                      "output %zu [%zu]: %g, expected %g", o, i, v[i], want_y[off + i]);
        off += m;
    }
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* CPU against REF on the same input: f32 within ONNX's rtol, bf16 within
 * what bf16 activations and weights allow (OpenVINO's bf16 tests use 1e-2
 * relative to the output's scale). */
static void compare_path_with_ref(const char *path, const char *name, const char *precision,
                                  float rtol)
{
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, path, &model));
    rn_compiled_model *cpu = compile(core, model, "CPU", precision);
    rn_compiled_model *ref = compile(core, model, "REF", NULL);
    size_t n1, n2;
    float *a = cpu_testing_run_once(cpu, &n1);
    float *b = cpu_testing_run_once(ref, &n2);
    cr_assert_eq(n1, n2);
    float scale = 0.0f;
    for (size_t i = 0; i < n2; i++)
        scale = fmaxf(scale, fabsf(b[i]));
    for (size_t i = 0; i < n2; i++)
        cr_assert(fabsf(a[i] - b[i]) <= rtol * fmaxf(fabsf(b[i]), scale) + 1e-6f,
                  "%s %s [%zu]: CPU %g, REF %g", name, precision, i, a[i], b[i]);
    free(a);
    free(b);
    rn_compiled_model_free(cpu);
    rn_compiled_model_free(ref);
    rn_model_free(model);
    rn_core_free(core);
}

static void compare_with_ref(const char *name, const char *precision, float rtol)
{
    char path[512];
    cpu_testing_light(name, path, sizeof path);
    compare_path_with_ref(path, name, precision, rtol);
}

/* ResNet-50 compiled for CPU in f32 under the hint, with `threads`
 * INFERENCE_NUM_THREADS (NULL: the default): its Winograd convolutions. */
static int resnet50_winograd(rn_core *core, rn_model *model, const char *hint, const char *threads)
{
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", "f32"},
                       {"PERFORMANCE_HINT", hint},
                       {"INFERENCE_NUM_THREADS", threads}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, "CPU", p, threads != NULL ? 3 : 2, &cm));
    int wino = cpu_testing_winograd_nodes(cm);
    rn_compiled_model_free(cm);
    return wino;
}

/* ResNet-50's stride-1 3x3 convolutions at 14x14 and more (3 at 56x56, 3
 * at 28x28, 5 at 14x14; not the 3 stride-2 ones nor the 3 at 7x7) run
 * Winograd where oneDNN has it, under PERFORMANCE (the default), on
 * THROUGHPUT's single-core streams; on a team of two (LATENCY) only the 3
 * at 28x28, which oneDNN runs with its F(4x4, 3x3) kernel (its F(2x2, 3x3)
 * one loses to the direct kernel on a team, conv.c). The result stays
 * REF's within ONNX's f32 tolerance; elsewhere (AVX2, oneDNN 3.x) none
 * runs Winograd. */
Test(cpu, resnet50_runs_its_3x3_convolutions_as_winograd_where_it_pays, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    read_light("resnet50", &core, &model);
    bool has = device_has_winograd();
    int one = resnet50_winograd(core, model, "THROUGHPUT", NULL);
    int team = resnet50_winograd(core, model, "LATENCY", "2");
    cr_assert_eq(one, has ? 11 : 0, "THROUGHPUT: %d Winograd convolutions", one);
    cr_assert_eq(team, has ? 3 : 0, "LATENCY on 2 threads: %d Winograd convolutions", team);
    cr_log_info("%d of ResNet-50's convolutions run Winograd on one thread, %d on two", one, team);
    rn_model_free(model);
    rn_core_free(core);
    compare_with_ref("resnet50", "f32", 1e-3f);
}

/* tests/cpu/winograd.onnx (make_winograd_model.py): a first convolution of
 * 3 channels, then two 3x3 convolutions, 64 -> 128 at 56x56 and 128 ->
 * 128 at 28x28 (oneDNN's F(4x4, 3x3) kernel, on a team of any size), all
 * of He-initialised weights. Where they run Winograd, the first reads the
 * model's plain input and
 * writes their nChw16c (cpu_mark_winograd_inputs), so the only conversion
 * left is the result's to plain. Winograd sums the products of transformed 4x4 or 6x6 tiles, not
 * the 576 or 1152 products of each output: its rounding differs from the direct
 * sum's as the direct sum's differs from REF's order, by a few ulps of the
 * sums, ~1e-6 of the output's scale (measured on AVX-512: 1.0-1.2e-6
 * Winograd, 0.9-1.4e-6 direct), inside the 1e-5 of it asserted here, a hundredth of what
 * the f32 comparisons with REF above allow (ONNX's rtol 1e-3). Under
 * ACCURACY the direct kernels run. */
Test(cpu, winograd_convolutions_match_ref)
{
    const char *path = "tests/cpu/winograd.onnx";
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, path, &model));
    rn_compiled_model *perf = compile_f32_mode(core, model, "PERFORMANCE");
    rn_compiled_model *acc = compile_f32_mode(core, model, "ACCURACY");
    int expect = device_has_winograd() ? 2 : 0;
    cr_assert_eq(cpu_testing_winograd_nodes(perf), expect,
                 "%d Winograd convolutions under PERFORMANCE", cpu_testing_winograd_nodes(perf));
    cr_assert_eq(cpu_testing_winograd_nodes(acc), 0);
    if (expect > 0)
        cr_assert_eq(conversions(perf), 1, "%d conversions, the result's expected only",
                     conversions(perf));
    rn_compiled_model *ref = compile(core, model, "REF", NULL);
    size_t n1, n2, n3;
    float *a = cpu_testing_run_once(perf, &n1);
    float *d = cpu_testing_run_once(acc, &n2);
    float *b = cpu_testing_run_once(ref, &n3);
    cr_assert(n1 == n3 && n2 == n3);
    float scale = 0.0f, worst = 0.0f, worst_direct = 0.0f;
    for (size_t i = 0; i < n3; i++)
        scale = fmaxf(scale, fabsf(b[i]));
    cr_assert_gt(scale, 0.0f);
    for (size_t i = 0; i < n3; i++) {
        worst = fmaxf(worst, fabsf(a[i] - b[i]) / scale);
        worst_direct = fmaxf(worst_direct, fabsf(d[i] - b[i]) / scale);
    }
    cr_log_info("largest difference from REF / scale: %g (%s), %g (direct)", worst,
                expect > 0 ? "Winograd" : "direct", worst_direct);
    cr_assert_leq(worst, 1e-5f, "PERFORMANCE: %g of the output's scale from REF", worst);
    cr_assert_leq(worst_direct, 1e-5f, "ACCURACY: %g of the output's scale from REF", worst_direct);
    free(a);
    free(b);
    free(d);
    rn_compiled_model_free(ref);
    rn_compiled_model_free(acc);
    rn_compiled_model_free(perf);
    rn_model_free(model);
    rn_core_free(core);
}

/* Transpose as a oneDNN reorder straight from the Conv's blocked output
 * (tests/cpu/make_transpose_model.py): no conversion before it, REF's
 * result. */
Test(cpu, transpose_reads_the_blocked_layout_and_matches_ref)
{
    const char *path = "tests/cpu/conv_relu_transpose.onnx";
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_f32(path, &core, &model);
    int ref = 0;
    cr_assert_eq(count_type(cm, "Transpose", &ref), 1);
    cr_assert_eq(ref, 0, "the Transpose runs REF's kernel");
    int n = conversions(cm);
    cr_assert_leq(n, 1, "%d conversions: only the model's input may be converted", n);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_path_with_ref(path, "conv_relu_transpose", "f32", 1e-5f);
}

/* A model with one attention block compiles to one runnel
 * ScaledDotProductAttention on oneDNN (transforms/fuse_attention.c,
 * plugins/cpu/attention.c), no Softmax left and `transposes` Transposes,
 * and its output is REF's (which runs the unfused graph) within 1e-4. */
static void check_attention(const char *path, const char *name, int transposes)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_f32(path, &core, &model);
    int ref = 0;
    cr_assert_eq(count_type(cm, "ScaledDotProductAttention", &ref), 1);
    cr_assert_eq(ref, 0, "the attention runs REF's kernel");
    cr_assert_eq(count_type(cm, "Softmax", NULL), 0, "a Softmax was left unfused");
    cr_assert_eq(count_type(cm, "Transpose", NULL), transposes);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_path_with_ref(path, name, "f32", 1e-4f);
}

/* One BERT encoder layer as PyTorch exports it
 * (tests/cpu/make_attention_model.py), mask [B, 1, 1, S]: the head
 * Transposes of Q, K and V are read with strides (qkv_layout BSHD), and
 * the context's head merge is written with them (out_layout BSHD): no
 * Transpose is left. */
Test(cpu, attention_is_one_onednn_kernel_and_matches_ref)
{
    check_attention("tests/cpu/attention_encoder.onnx", "attention_encoder", 0);
}

/* Constant K^T and V (qkv_layout BHSD: the Q Transpose stays), a scale by
 * Mul, a causal mask [1, 1, S, S] broadcast over batch and heads; the head
 * merge is written by the attention (out_layout BSHD). */
Test(cpu, causal_attention_matches_ref)
{
    check_attention("tests/cpu/attention_causal.onnx", "attention_causal", 1);
}

/* The FusedMatMul nodes of cm's plan, asserting none runs REF's kernel or
 * oneDNN's gemm-based matmul, nor, on AVX-512 (brgemm; not AMX) unless
 * RN_CPU_MATMUL_CONV1X1=0, its brgemm matmul; with no_reorder, that the
 * plan has no Reorder. */
static int encoder_products(rn_compiled_model *cm, bool no_reorder)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    const char *v = getenv("RN_CPU_MATMUL_CONV1X1");
    bool avx512 =
        cpu_flag("avx512f") && isa_allows("AVX512_CORE") && (v == NULL || strcmp(v, "0") != 0);
    int products = 0;
    for (size_t i = 0; i < n; i++) {
        if (no_reorder)
            cr_assert_neq(strcmp(nodes[i].layer_type, "Reorder"), 0, "a Reorder in the plan: %s",
                          nodes[i].name);
        if (strcmp(nodes[i].layer_type, "FusedMatMul") != 0)
            continue;
        products++;
        const char *impl = nodes[i].impl_type;
        cr_log_info("%s: %s", nodes[i].name, impl);
        cr_assert_neq(strcmp(impl, "ref"), 0, "%s runs REF's kernel", nodes[i].name);
        cr_assert_neq(strncmp(impl, "gemm", 4), 0, "%s runs oneDNN's gemm-based matmul (%s)",
                      nodes[i].name, impl);
        if (avx512 && strstr(impl, "amx") == NULL)
            cr_assert(strncmp(impl, "brg:", 4) != 0 && strncmp(impl, "brg_matmul", 10) != 0,
                      "%s runs oneDNN's brgemm matmul on AVX-512 (%s), not the 1x1 convolution",
                      nodes[i].name, impl);
    }
    return products;
}

/* The encoder layer's six products by constant weights (Q, K, V, the
 * attention's output, the feed-forward pair with its GELU): FusedMatMul on a
 * oneDNN kernel that does not pack the weights again on every call. Where
 * oneDNN's matmul is its gemm-based one (oneDNN 2.6 without brgemm: AVX2,
 * "gemm:jit", plain weights), plugins/cpu/gemm.c runs the product as a 1x1
 * convolution over x's own bytes (channels-last), weights converted once
 * into the convolution's layout; x and y stay plain, so no Reorder joins
 * the plan. The same where oneDNN's f32 matmul is brgemm on AVX-512, which
 * keeps such weights plain too ("brg:avx512_core"; the convolution took
 * 0.89-0.92 of its time on a Zen 4). Same result as REF's unfused graph. */
Test(cpu, encoder_products_never_run_the_gemm_matmul)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_f32("tests/cpu/attention_encoder.onnx", &core, &model);
    cr_assert_eq(encoder_products(cm, true), 6);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_path_with_ref("tests/cpu/attention_encoder.onnx", "attention_encoder", "f32", 1e-4f);
}

/* In bf16 on AVX-512 the encoder's products run as bf16 1x1 convolutions
 * too (the brgemm matmul packs its plain bf16 weights per call): x and y
 * keep the bf16 layout of the MatMul's shape (MiniLM-L6's plan has the
 * same 27 conversions either way). Close to REF's f32 unfused graph. */
Test(cpu, encoder_products_in_bf16_are_convolutions)
{
    if (!native_bf16())
        cr_skip_test("no native bf16 here (avx512_bf16 or amx_bf16, not capped)");
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, "tests/cpu/attention_encoder.onnx", &model));
    rn_compiled_model *cm = compile(core, model, "CPU", "bf16");
    cr_assert_eq(encoder_products(cm, false), 6);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_path_with_ref("tests/cpu/attention_encoder.onnx", "attention_encoder", "bf16", 2e-2f);
}

/* The encoder layer's two residual Adds (attention output + input, feed-
 * forward output + its input) are the products' sum post-ops
 * (transforms/fuse_conv.c fuse_matmul_add: FusedMatMul's input 3): no Add
 * is left in the plan, and the result is REF's unfused graph's. */
Test(cpu, encoder_residual_adds_are_product_sums)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_f32("tests/cpu/attention_encoder.onnx", &core, &model);
    cr_assert_eq(count_type(cm, "Add", NULL), 0, "an Add is left in the plan");
    int ref = 0;
    cr_assert_eq(count_type(cm, "FusedMatMul", &ref), 6);
    cr_assert_eq(ref, 0, "a product runs REF's kernel");
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_path_with_ref("tests/cpu/attention_encoder.onnx", "attention_encoder", "f32", 1e-4f);
}

Test(cpu, squeezenet_f32_matches_ref, .timeout = 300)
{
    compare_with_ref("squeezenet", "f32", 1e-3f);
}

/* Inception-v2's 7 pool projections (AveragePool 3x3/1 pad 1 -> Conv 1x1
 * with its BatchNormalization folded -> Relu) run the Conv first and the
 * pool on its fewer output channels (transforms pool_after_conv): each
 * projection is a Conv without an activation, an AveragePool, and the
 * ReLU after the pool, a node of its own (the eighth AveragePool is the
 * classifier's, over the 7x7 map). The result is REF's, which runs the graph as
 * written (pool first). */
Test(cpu, inception_v2_pools_its_projections_after_the_conv_and_matches_ref, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_light_f32("inception_v2", &core, &model);
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int convs = 0, relus = 0, pools = 0;
    for (size_t i = 0; i < n; i++) {
        convs += strcmp(nodes[i].layer_type, "Conv") == 0;
        relus += strcmp(nodes[i].layer_type, "Relu") == 0;
        pools += strcmp(nodes[i].layer_type, "AveragePool") == 0;
    }
    /* Before, every Conv was a FusedConv with its ReLU, and no ReLU was
     * left on its own. The other 2 Convs without an activation are merged
     * duplicates read by several BatchNormalizations
     * (inception_v2_runs_each_duplicate_convolution_once). */
    cr_assert_eq(pools, 8, "%d AveragePools", pools);
    cr_assert_eq(convs, 9, "%d Convs without an activation (the pool projections and 2 shared)",
                 convs);
    cr_assert_eq(relus, 7, "%d ReLUs of their own (after the projections' pools)", relus);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_with_ref("inception_v2", "f32", 1e-3f);
}

/* The light Inception-v2 fills most of its weights with one number
 * (ConstantOfShape 0.02), so sibling convolutions over one input often hold
 * equal weights: transforms merge_duplicates runs each such convolution
 * once (OpenVINO's SharedOpOptimization does too: 60 of the 69
 * convolutions run in its exec graph). Where the merged convolution's
 * BatchNormalizations differ, each reader's BatchNormalization + ReLU is a
 * FusedBatchNormalization of its own (it cannot fold into the shared
 * weights). The result is REF's, which runs all 69
 * (inception_v2_pools_its_projections_after_the_conv_and_matches_ref). */
Test(cpu, inception_v2_runs_each_duplicate_convolution_once, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_light_f32("inception_v2", &core, &model);
    int ref = 0;
    int convs = count_type(cm, "Conv", &ref) + count_type(cm, "FusedConv", &ref);
    cr_assert_eq(convs, 60, "%d convolutions run (69 in the model, 9 duplicates)", convs);
    cr_assert_eq(count_type(cm, "FusedBatchNormalization", &ref), 6);
    cr_assert_eq(count_type(cm, "BatchNormalization", NULL), 0, "a BatchNormalization unfused");
    cr_assert_eq(ref, 0, "a convolution or normalization runs REF's kernel");
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* DenseNet-121: every Concat in place (blocked_concats_are_written_in_place)
 * and its pre-activation BatchNormalization + ReLU (after a Concat, so not
 * foldable into a Conv) one FusedBatchNormalization primitive each: no
 * standalone BatchNormalization or Relu left, the BatchNormalizations after
 * a Conv folded into it. The result is REF's, which runs the unfused graph
 * on plain tensors (its Concats are placed by the same plan rule: ONNX's own
 * expected output checks both devices in the conformance runner, and
 * concat_chain_places_shared_inputs_only_where_safe checks the rule against
 * onnx's reference evaluator). */
Test(cpu, densenet121_fuses_its_batchnorms_and_matches_ref, .timeout = 600)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_light_f32("densenet121", &core, &model);
    int ref = 0;
    cr_assert_eq(count_type(cm, "BatchNormalization", NULL), 0, "a BatchNormalization left");
    cr_assert_eq(count_type(cm, "Relu", NULL), 0, "a ReLU left unfused");
    /* 58 dense layers' and 3 transitions' pre-activations and the final one. */
    cr_assert_eq(count_type(cm, "FusedBatchNormalization", &ref), 62);
    cr_assert_eq(ref, 0, "a FusedBatchNormalization runs REF's kernel");
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_with_ref("densenet121", "f32", 1e-3f);
}

/* DenseNet-121's 62 pre-activations (BatchNormalization + ReLU after a
 * Concat) over channels-last f32, where 2.6's convolutions write it on
 * AVX-512, run as a depthwise 1x1 convolution with the statistics folded
 * (nn.c, bn_as_depthwise: brdgmm_dw:avx512_core), not oneDNN's bnorm_jit,
 * 1.5-2x slower there; over a blocked layout (AVX2's nChw8c, steered
 * Concats) they stay bnorm. Every one is one of the two, no other kernel
 * (no gemm or reference depthwise convolution), and the result is REF's
 * (densenet121_fuses_its_batchnorms_and_matches_ref). */
Test(cpu, densenet121_batchnorms_over_channels_last_are_depthwise_convolutions, .timeout = 600)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_light_f32("densenet121", &core, &model);
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    int major = cpu_testing_onednn_major(core);
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int depthwise = 0, bnorm = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].layer_type, "FusedBatchNormalization") != 0)
            continue;
        bool dw = strncmp(nodes[i].impl_type, "brdgmm_dw:avx512", 16) == 0;
        bool bn = strncmp(nodes[i].impl_type, "bnorm", 5) == 0;
        cr_assert(dw || bn, "%s runs %s", nodes[i].name, nodes[i].impl_type);
        depthwise += dw;
        bnorm += bn;
    }
    cr_assert_eq(depthwise + bnorm, 62);
    /* 2.6 in f32 on AVX-512: brgconv writes channels-last and no Concat is
     * steered (blocked_concats_are_written_in_place skips there). */
    if (major == 2 && strncmp(isa, "avx512", 6) == 0)
        cr_assert_eq(depthwise, 62, "oneDNN 2 on %s: %d of 62 as depthwise convolutions", isa,
                     depthwise);
    else
        cr_log_info("oneDNN %d on %s: %d depthwise, %d bnorm", major, isa, depthwise, bnorm);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* bf16 on request: native where the CPU has it, f32 on AVX2 (the precision
 * the compiled model reports, precision_follows_the_isa); either way the
 * shared, in-place Concat buffers hold what REF computes. The tolerance is
 * looser than ShuffleNet's for 121 layers of bf16 rounding; it was run only
 * where bf16 resolves to f32 (AVX2) when written, and a misplaced slice
 * gives errors of the output's own size. */
Test(cpu, densenet121_bf16_is_close_to_ref, .timeout = 600)
{
    compare_with_ref("densenet121", "bf16", 5e-2f);
}

/* ShuffleNet's 16 channel shuffles (Reshape -> Transpose -> Reshape) are
 * one runnel ShuffleChannels each on oneDNN (fuse_shuffle_channels): no
 * Transpose left, one Reshape (the classifier's flatten). One that reads a
 * plain tensor (after a gemm convolution) writes the layout its depthwise
 * convolution reads itself, one reorder (plugins/cpu/nn.c,
 * shuffle_into_blocked, shuffle_channels_last): the channel-blocked one
 * on oneDNN 2.6 with AVX2, channels-last where the depthwise convolution
 * takes it (3.x's brdgmm_dw on AVX2; 2.6 on AVX-512); no conversion
 * between them. */
Test(cpu, shufflenet_channel_shuffles_are_one_node, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_light_f32("shufflenet", &core, &model);
    int ref = 0;
    cr_assert_eq(count_type(cm, "ShuffleChannels", &ref), 16);
    cr_assert_eq(ref, 0, "a ShuffleChannels runs REF's kernel");
    cr_assert_eq(count_type(cm, "Transpose", NULL), 0, "a Transpose left");
    cr_assert_eq(count_type(cm, "Reshape", NULL), 1);
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int from_plain = 0, major = cpu_testing_onednn_major(core);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].layer_type, "ShuffleChannels") != 0 ||
            strcmp(nodes[i].input_layouts, "plain") != 0)
            continue;
        from_plain++;
        /* The layout its consumer reads (nn.c, shuffle_into_blocked): channel
         * blocks (aBcd8b, aBcd16b) or channels-last (acdb), whichever the
         * depthwise convolution after it takes on this ISA and oneDNN. */
        const char *o = nodes[i].output_layouts;
        cr_assert(strncmp(o, "aB", 2) == 0 || strncmp(o, "acdb", 4) == 0,
                  "ShuffleChannels '%s' over plain writes %s (runs %s), not a layout blocked "
                  "along channels or channels-last",
                  nodes[i].name, o, nodes[i].impl_type);
        for (size_t k = 0; k < n; k++)
            if (nodes[k].execution_order == nodes[i].execution_order + 1)
                cr_assert(strcmp(nodes[k].layer_type, "Reorder") != 0,
                          "a Reorder after ShuffleChannels '%s' (writes %s)", nodes[i].name,
                          nodes[i].output_layouts);
    }
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    if (strncmp(isa, "avx2", 4) == 0 && major == 2) /* gemm writes their inputs plain (measured) */
        cr_assert_eq(from_plain, 16, "%d channel shuffles read plain", from_plain);
    else
        cr_log_info("%s: %d of ShuffleNet's channel shuffles read plain", isa, from_plain);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* Inception-v1's LRNs and poolings (plugins/cpu/nn.c). LRN across channels
 * over a channel-blocked producer runs over plain nchw between two reorders
 * inside the node (lrn_over_plain: oneDNN 2.6's LRN over nChw8c is 3-6x
 * slower): its two LRNs, after a pooling and a convolution that write a
 * blocked layout, keep that layout as their input (no conversion by the
 * plan) and say so in their impl; an LRN whose producer writes plain is
 * logged. Its 13 MaxPools and its AveragePool run oneDNN's SSE4.1 kernel
 * where oneDNN would give them its AVX2 one (prefer_sse41_pooling: 3-8x
 * faster, measured on AVX2, bench/LOG.md); on other ISAs the kernels are
 * logged. The output is REF's. */
Test(cpu, inception_v1_lrn_and_pooling_kernels_match_ref, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_light_f32("inception_v1", &core, &model);
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    bool measured = strncmp(isa, "avx2", 4) == 0;
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int lrns = 0, plain = 0, pools = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].layer_type, "MaxPool") == 0 ||
            strcmp(nodes[i].layer_type, "AveragePool") == 0) {
            pools++;
            if (measured)
                cr_assert_str_eq(nodes[i].impl_type, "jit:sse41", "%s '%s' runs %s (reads %s)",
                                 nodes[i].layer_type, nodes[i].name, nodes[i].impl_type,
                                 nodes[i].input_layouts);
            else
                cr_log_info("%s: %s '%s' runs %s (reads %s)", isa, nodes[i].layer_type,
                            nodes[i].name, nodes[i].impl_type, nodes[i].input_layouts);
            continue;
        }
        if (strcmp(nodes[i].layer_type, "LRN") != 0)
            continue;
        lrns++;
        bool blocked = strchr(nodes[i].input_layouts, 'B') != NULL;
        if (!blocked) {
            cr_log_info("LRN '%s' reads %s (not blocked along C): runs %s", nodes[i].name,
                        nodes[i].input_layouts, nodes[i].impl_type);
            continue;
        }
        cr_assert_not_null(strstr(nodes[i].impl_type, "(plain)"),
                           "LRN '%s' reads %s and runs %s, not over plain", nodes[i].name,
                           nodes[i].input_layouts, nodes[i].impl_type);
        plain++;
    }
    cr_assert_eq(lrns, 2, "%d LRNs", lrns);
    cr_assert_eq(pools, 14, "%d MaxPools and AveragePools", pools);
    cr_log_info("%d of Inception-v1's LRNs run over plain", plain);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_with_ref("inception_v1", "f32", 1e-3f);
}

/* Whether a convolution's input layouts ("x,weights,...") give its weights
 * in a 5-D layout (the axes before the block sizes: "aBCde8c8b", groups
 * first); "plain" when gemm's. */
static bool grouped_weights(const char *layouts)
{
    const char *w = strchr(layouts, ',');
    int axes = 0;
    for (w = w != NULL ? w + 1 : ""; *w != '\0' && *w != ',' && !(*w >= '0' && *w <= '9'); w++)
        axes += (*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z');
    return axes == 5;
}

/* ShuffleNet's grouped 1x1 convolutions (FusedConvs, a ReLU or a residual
 * sum + ReLU): oneDNN 2.6 picks gemm for groups that are not whole SIMD
 * blocks (28, 34, 68 channels per group on AVX2), and gemm's post-ops are a
 * scalar pass of their own (a sum ten times the convolution's own time), so
 * conv.c runs them as a primitive of their own after a post-op-free gemm:
 * a binary add of the residual with the ReLU, or an eltwise ReLU, the
 * impl "x64:gemm:jit + jit:uni" (plugins/cpu/conv.c, split_epilogue). Its
 * average poolings, which read the plain output of those gemm convolutions,
 * run a jit kernel over a channel-blocked layout, not oneDNN's plain
 * simple_nchw:any (plugins/cpu/nn.c, pool_over_blocked). Where oneDNN runs
 * AVX2 (where that was measured: bench/LOG.md "ShuffleNet: gemm
 * convolutions with the post-ops as a primitive of their own") every gemm
 * FusedConv must run its post-ops so, no grouped one AVX2's direct jit
 * kernel (gemm is 2.3x faster there), and no pooling a reference kernel.
 * On oneDNN 3.x (AVX2) the grouped 1x1 convolutions take
 * brgconv_1x1:avx2 with their post-ops inside (bench/LOG.md "oneDNN 3.2.0
 * (PyPI) beside Debian's 2.6.3"): every grouped FusedConv but gemm's
 * must run a brgemm kernel there. On other ISAs the kernels are logged,
 * not asserted. The output is REF's everywhere. */
Test(cpu, shufflenet_grouped_convs_take_the_fast_kernels_and_match_ref, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = compile_light_f32("shufflenet", &core, &model);
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    int major = cpu_testing_onednn_major(core);
    bool avx2 = strncmp(isa, "avx2", 4) == 0, measured = avx2 && major == 2;
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int residual = 0, split = 0, pools = 0;
    for (size_t i = 0; i < n; i++) {
        const char *impl = nodes[i].impl_type;
        if (strcmp(nodes[i].layer_type, "AveragePool") == 0 ||
            strcmp(nodes[i].layer_type, "MaxPool") == 0) {
            pools++;
            if (!measured)
                cr_log_info("%s: pooling '%s' runs %s (reads %s)", isa, nodes[i].name, impl,
                            nodes[i].input_layouts);
            else
                cr_assert(strncmp(impl, "simple", 6) != 0 && strncmp(impl, "ref", 3) != 0,
                          "pooling '%s' runs %s (reads %s)", nodes[i].name, impl,
                          nodes[i].input_layouts);
            continue;
        }
        if (strcmp(nodes[i].layer_type, "FusedConv") != 0)
            continue;
        int inputs = 1;
        for (const char *c = nodes[i].input_layouts; *c != '\0'; c++)
            inputs += *c == ',';
        residual += inputs == 4;
        bool gemm = strstr(impl, "gemm") != NULL;
        split += gemm && strstr(impl, " + ") != NULL;
        if (avx2 && major >= 3 && grouped_weights(nodes[i].input_layouts) && !gemm)
            cr_assert(strncmp(impl, "brg", 3) == 0,
                      "grouped FusedConv '%s' runs %s on oneDNN %d (reads %s)", nodes[i].name, impl,
                      major, nodes[i].input_layouts);
        if (!measured) {
            cr_log_info("%s: FusedConv '%s' runs %s (reads %s)", isa, nodes[i].name, impl,
                        nodes[i].input_layouts);
            continue;
        }
        if (gemm) {
            const char *epi = inputs == 4 ? "x64:gemm:jit + jit:uni" : "x64:gemm:jit + jit:avx2";
            cr_assert_str_eq(impl, epi, "gemm FusedConv '%s' runs %s (reads %s)", nodes[i].name,
                             impl, nodes[i].input_layouts);
        } else if (strcmp(impl, "jit:avx2") == 0) {
            cr_assert(!grouped_weights(nodes[i].input_layouts),
                      "grouped FusedConv '%s' runs jit:avx2 (reads %s)", nodes[i].name,
                      nodes[i].input_layouts);
        }
    }
    cr_assert_eq(residual, 13, "%d FusedConvs with a residual", residual);
    cr_assert_eq(pools, 5, "%d poolings", pools);
    if (measured)
        cr_assert_geq(split, 29, "%d gemm FusedConvs run their post-ops after them", split);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    compare_with_ref("shufflenet", "f32", 1e-3f);
}

Test(cpu, shufflenet_bf16_is_close_to_ref, .timeout = 300)
{
    compare_with_ref("shufflenet", "bf16", 2e-2f);
}

/* In native bf16 ShuffleNet's convolutions write channels-last (oneDNN
 * 2.6's brgconv on AVX-512; 3.x's): none runs gemm over plain between two
 * conversions (conv.c describes a gemm pick again over channels-last), and
 * no channel shuffle runs oneDNN's reference shuffle (nn.c,
 * shuffle_channels_last: a jit reorder). The layouts are logged, never
 * assumed; REF's output is checked by the test above. */
Test(cpu, shufflenet_bf16_has_no_gemm_conv_nor_reference_shuffle, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    read_light("shufflenet", &core, &model);
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    if (strstr(isa, "bf16") == NULL && strstr(isa, "amx") == NULL) {
        rn_model_free(model);
        rn_core_free(core);
        cr_skip_test("oneDNN runs %s here, without native bf16", isa);
    }
    rn_compiled_model *cm = compile(core, model, "CPU", "bf16");
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int shuffles = 0;
    for (size_t i = 0; i < n; i++) {
        const char *type = nodes[i].layer_type, *impl = nodes[i].impl_type;
        if (strcmp(type, "Conv") == 0 || strcmp(type, "FusedConv") == 0)
            cr_expect(strstr(impl, "gemm") == NULL, "%s: %s '%s' runs %s (reads %s)", isa, type,
                      nodes[i].name, impl, nodes[i].input_layouts);
        if (strcmp(type, "ShuffleChannels") == 0) {
            shuffles++;
            cr_expect(strncmp(impl, "ref", 3) != 0, "%s: ShuffleChannels '%s' runs %s over %s", isa,
                      nodes[i].name, impl, nodes[i].input_layouts);
            cr_log_info("%s: ShuffleChannels '%s' %s: %s -> %s", isa, nodes[i].name, impl,
                        nodes[i].input_layouts, nodes[i].output_layouts);
        }
    }
    cr_expect_eq(shuffles, 16);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* ---- concurrent requests on streams ---- */

typedef struct job {
    atomic_int done;
    atomic_int failed;
} job;

static void on_done(rn_infer_request *r, rn_status status, void *user)
{
    (void)r;
    job *j = user;
    if (status != RN_OK)
        atomic_fetch_add(&j->failed, 1);
    atomic_fetch_add(&j->done, 1);
}

Test(cpu, async_streams_give_the_sync_result, .timeout = 300)
{
    rn_core *core;
    rn_model *model;
    read_light("squeezenet", &core, &model);
    rn_property p[] = {{"PERFORMANCE_HINT", "THROUGHPUT"}, {"INFERENCE_PRECISION_HINT", "f32"}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, "CPU", p, 2, &cm));
    size_t n;
    float *want = cpu_testing_run_once(cm, &n);
    enum { REQUESTS = 4, ROUNDS = 3 };
    rn_infer_request *r[REQUESTS];
    job j = {0};
    for (int i = 0; i < REQUESTS; i++) {
        OK(rn_compiled_model_create_infer_request(cm, &r[i]));
        rn_tensor *in;
        OK(rn_infer_request_get_input_tensor(r[i], 0, &in));
        float *x = rn_tensor_data(in);
        for (size_t k = 0; k < rn_tensor_element_count(in); k++)
            x[k] = (float)((k * 7919u) % 1000u) / 500.0f - 1.0f;
        OK(rn_infer_request_set_callback(r[i], on_done, &j));
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < REQUESTS; i++)
            OK(rn_infer_request_start_async(r[i]));
        for (int i = 0; i < REQUESTS; i++)
            OK(rn_infer_request_wait(r[i]));
        for (int i = 0; i < REQUESTS; i++) {
            rn_tensor *out;
            OK(rn_infer_request_get_output_tensor(r[i], 0, &out));
            cr_assert_eq(memcmp(rn_tensor_data(out), want, n * sizeof(float)), 0,
                         "request %d, round %d differs from the sync run", i, round);
        }
    }
    cr_assert_eq(atomic_load(&j.done), REQUESTS * ROUNDS);
    cr_assert_eq(atomic_load(&j.failed), 0);
    for (int i = 0; i < REQUESTS; i++)
        rn_infer_request_free(r[i]);
    free(want);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}
