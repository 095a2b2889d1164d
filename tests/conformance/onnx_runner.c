/* Conformance runner over ONNX backend test folders.
 *
 *   bazel run //tests/conformance:onnx -- --device REF DIR...
 *
 * Each DIR is either one case (model.onnx + test_data_set_N/{input,output}_K.pb)
 * or a folder of cases (searched one level down), or a folder of ONNX "light"
 * models (light_X.onnx + light_X_output_0.pb, whose input is arange(n)/n as
 * float32). Every case runs in a child process with a time limit, so a crash
 * or a hang is a FAIL with its reason, never the end of the run. Outputs are
 * compared with ONNX's tolerance (rtol 1e-3, atol 1e-7; NaN equals NaN;
 * --rtol and --atol change them, for outputs of another runtime).
 *
 * Inputs and outputs may be tensors (strings included), sequences (of
 * tensors or of maps), maps or optionals: a .pb file is read as the
 * TensorProto, SequenceProto, MapProto or OptionalProto that the model
 * declares for its value (each parses as the others), sequences are
 * compared item by item, maps key by key in any order, and an optional
 * without a value must come out as one.
 *
 * A case is UNSUPPORTED when reading or compiling refuses it with
 * RN_UNSUPPORTED (an op, type or attribute the device lacks); any other
 * failure is FAIL. The runner prints one line per case that is not a PASS, a
 * per-op table and a final line "N passed, N failed, N unsupported".
 *
 * --expected FILE: the cases expected not to pass, one per line as
 * "FAIL NAME" or "UNSUPPORTED NAME" (scripts/test keeps one such file per
 * device and corpus, tests/conformance/expected_DEVICE_CORPUS.txt). Every case
 * runs; the exit status is non-zero when a case that is not listed does not
 * pass, when a case listed as UNSUPPORTED now fails, or when a listed case was
 * not found among the cases run ("unexpected ..." lines). A listed case that
 * now passes, or that now is UNSUPPORTED instead of FAIL, is reported
 * ("listed case now ...: remove it from the list") and does not fail the run.
 * The last line counts them: "conformance: N passed, N unexpected, N expected
 * failures, N unsupported, N listed now pass". --write-expected FILE writes
 * the list that this run's results make.
 *
 * --baseline FILE: every case named in FILE (one per line) must PASS; the
 * exit status is non-zero otherwise. --write-passing FILE writes the names
 * of the passing cases. --filter SUBSTR keeps the cases whose name contains it.
 * A case folder may hold a file `tolerance`, "rtol R atol A", that replaces
 * --rtol and --atol for that case.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "graph/onnx/onnx_reader.h"
#include "runnel/runnel.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#define MAX_CASES 8192
#define MAX_OPS   512

typedef enum { PASS, FAIL, UNSUPPORTED } verdict;
static const char *const verdict_names[] = {"PASS", "FAIL", "UNSUPPORTED"};

typedef struct test_case {
    char *name;
    char *dir;          /* backend case folder, or NULL for a light model */
    char *model;        /* path of the .onnx file */
    char *light_output; /* light models: expected output .pb */
    verdict result;
    char reason[512];
    char ops[256]; /* op types of the model, space separated */
} test_case;

typedef struct op_row {
    char op[64];
    int counts[3];
} op_row;

static const char *device = "REF";
/* --property KEY=VALUE: compile-time properties (INFERENCE_PRECISION_HINT=f32). */
#define MAX_PROPERTIES 16
static rn_property properties[MAX_PROPERTIES];
static size_t n_properties;
static double time_limit_s = 60.0;
static bool use_fork = true;
static bool verbose = false;
static double rel_tol = 1e-3, abs_tol = 1e-7;

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return d;
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_case(const void *a, const void *b)
{
    return strcmp(((const test_case *)a)->name, ((const test_case *)b)->name);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- discovery ---- */

static int n_cases;
static test_case cases[MAX_CASES];

static void add_case(const char *name, const char *dir, const char *model, const char *light)
{
    if (n_cases == MAX_CASES) {
        fprintf(stderr, "too many cases (max %d)\n", MAX_CASES);
        exit(2);
    }
    test_case *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->name = xstrdup(name);
    c->dir = dir ? xstrdup(dir) : NULL;
    c->model = xstrdup(model);
    c->light_output = light ? xstrdup(light) : NULL;
}

static const char *base_name(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    static char buf[1024];
    snprintf(buf, sizeof buf, "%.*s", (int)n, path);
    const char *slash = strrchr(buf, '/');
    return slash ? slash + 1 : buf;
}

static void discover(const char *path, int depth)
{
    char model[4096];
    snprintf(model, sizeof model, "%s/model.onnx", path);
    if (is_file(model)) {
        add_case(base_name(path), path, model, NULL);
        return;
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        exit(2);
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, names[i]);
        size_t len = strlen(names[i]);
        if (len > 5 && strcmp(names[i] + len - 5, ".onnx") == 0) {
            char out[4096];
            snprintf(out, sizeof out, "%s/%.*s_output_0.pb", path, (int)(len - 5), names[i]);
            if (is_file(out)) {
                char cname[512];
                snprintf(cname, sizeof cname, "%.*s", (int)(len - 5), names[i]);
                add_case(cname, NULL, sub, out);
            }
        } else if (depth > 0 && is_dir(sub)) {
            discover(sub, depth - 1);
        }
        free(names[i]);
    }
    free(names);
}

/* Lists the op types of a model into ops (best effort: empty when the file
 * does not parse). */
static void model_ops(const char *path, char *ops, size_t size)
{
    ops[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
    size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    Onnx__ModelProto *m =
        buf && got == (size_t)len ? onnx__model_proto__unpack(NULL, got, buf) : NULL;
    free(buf);
    if (m == NULL || m->graph == NULL) {
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        return;
    }
    size_t used = 0;
    for (size_t i = 0; i < m->graph->n_node; i++) {
        const char *op = m->graph->node[i]->op_type;
        if (op == NULL || strcmp(op, "Constant") == 0)
            continue;
        char word[80];
        snprintf(word, sizeof word, " %s ", op);
        char padded[300];
        snprintf(padded, sizeof padded, " %s ", ops);
        if (strstr(padded, word) != NULL)
            continue;
        if (used + strlen(op) + 2 < size)
            used += (size_t)snprintf(ops + used, size - used, "%s%s", used ? " " : "", op);
    }
    onnx__model_proto__free_unpacked(m, NULL);
}

/* ---- running one case (in the child) ---- */

static int result_fd = -1;

static verdict report(test_case *c, verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static verdict report(test_case *c, verdict v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
    c->result = v;
    return v;
}

/* Decodes a float8 byte: `ebits` exponent bits with `bias`; the FNUZ kinds
 * have NaN at 0x80 and no infinity or negative zero; E4M3FN has NaN at
 * S.1111.111 and no infinity; E5M2 is IEEE-like. */
static double f8_to_double(uint8_t b, int ebits, int bias, bool fnuz)
{
    int mbits = 7 - ebits;
    if (fnuz && b == 0x80)
        return NAN;
    int e = (b >> mbits) & ((1 << ebits) - 1), m = b & ((1 << mbits) - 1);
    if (!fnuz && ebits == 4 && e == 15 && m == 7)
        return NAN;
    if (!fnuz && ebits == 5 && e == 31)
        return m ? NAN : ((b & 0x80) ? -INFINITY : INFINITY);
    double v = e == 0 ? ldexp(m, 1 - bias - mbits) : ldexp(m + (1 << mbits), e - bias - mbits);
    return (b & 0x80) ? -v : v;
}

static double elem_as_double(rn_element_type type, const void *data, size_t i)
{
    switch (type) {
    case RN_F8E4M3FN:
        return f8_to_double(((const uint8_t *)data)[i], 4, 7, false);
    case RN_F8E4M3FNUZ:
        return f8_to_double(((const uint8_t *)data)[i], 4, 8, true);
    case RN_F8E5M2:
        return f8_to_double(((const uint8_t *)data)[i], 5, 15, false);
    case RN_F8E5M2FNUZ:
        return f8_to_double(((const uint8_t *)data)[i], 5, 16, true);
    case RN_F32:
        return ((const float *)data)[i];
    case RN_F64:
        return ((const double *)data)[i];
    case RN_I8:
        return ((const int8_t *)data)[i];
    case RN_U8:
    case RN_BOOL:
        return ((const uint8_t *)data)[i];
    case RN_I16:
        return ((const int16_t *)data)[i];
    case RN_U16:
        return ((const uint16_t *)data)[i];
    case RN_I32:
        return ((const int32_t *)data)[i];
    case RN_U32:
        return ((const uint32_t *)data)[i];
    case RN_I64:
        return (double)((const int64_t *)data)[i];
    case RN_U64:
        return (double)((const uint64_t *)data)[i];
    case RN_F16: {
        uint16_t h = ((const uint16_t *)data)[i];
        int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double v = e == 0    ? ldexp(m, -24)
                   : e == 31 ? (m ? NAN : INFINITY)
                             : ldexp(m + 1024, e - 25);
        return (h & 0x8000) ? -v : v;
    }
    case RN_BF16: {
        uint32_t bits = (uint32_t)((const uint16_t *)data)[i] << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    default:
        return 0;
    }
}

static bool is_float_type(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16 || t == RN_F8E4M3FN ||
           t == RN_F8E4M3FNUZ || t == RN_F8E5M2 || t == RN_F8E5M2FNUZ;
}

/* Compares an output with the expected tensor; on mismatch writes why. */
static bool compare(const char *name, const rn_tensor *got, const graph_tensor *want, char *why,
                    size_t size)
{
    if (rn_tensor_element_type(got) != want->type) {
        snprintf(why, size, "output '%s': type %s, expected %s", name,
                 rn_element_type_name(rn_tensor_element_type(got)),
                 rn_element_type_name(want->type));
        return false;
    }
    size_t rank = rn_tensor_rank(got);
    const int64_t *dims = rn_tensor_dims(got);
    bool same = rank == (size_t)want->rank;
    for (size_t d = 0; same && d < rank; d++)
        same = dims[d] == want->dims[d];
    if (!same) {
        char a[128] = "", b[128] = "";
        size_t ua = 0, ub = 0;
        for (size_t d = 0; d < rank && ua < sizeof a; d++)
            ua +=
                (size_t)snprintf(a + ua, sizeof a - ua, "%s%lld", d ? "," : "", (long long)dims[d]);
        for (int d = 0; d < want->rank && ub < sizeof b; d++)
            ub += (size_t)snprintf(b + ub, sizeof b - ub, "%s%lld", d ? "," : "",
                                   (long long)want->dims[d]);
        snprintf(why, size, "output '%s': shape [%s], expected [%s]", name, a, b);
        return false;
    }
    size_t n = graph_tensor_count(want);
    const void *g = rn_tensor_data(got);
    if (want->type == RN_STRING) {
        char *const *gs = g, *const *ws = want->data;
        for (size_t i = 0; i < n; i++)
            if (gs[i] == NULL || strcmp(gs[i], ws[i]) != 0) {
                snprintf(why, size, "output '%s': element %zu is \"%s\", expected \"%s\"", name, i,
                         gs[i] ? gs[i] : "(null)", ws[i]);
                return false;
            }
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        double x = elem_as_double(want->type, g, i);
        double e = elem_as_double(want->type, want->data, i);
        bool ok;
        if (is_float_type(want->type)) {
            if (isnan(e))
                ok = isnan(x);
            else if (isinf(e))
                ok = x == e;
            else
                ok = fabs(x - e) <= abs_tol + rel_tol * fabs(e);
        } else if (want->type == RN_I64 || want->type == RN_U64) {
            size_t es = rn_element_type_size(want->type);
            ok = memcmp((const char *)g + i * es, (const char *)want->data + i * es, es) == 0;
        } else {
            ok = x == e;
        }
        if (!ok) {
            snprintf(why, size, "output '%s': element %zu is %.9g, expected %.9g", name, i, x, e);
            return false;
        }
    }
    return true;
}

/* ONNX's test data stores bfloat16 tensors as uint16 (NumPy has no bfloat16):
 * the bits are the same, so a u16 tensor where the model declares bf16 is read
 * as bf16 (the items of a sequence too). */
static void fix_bf16(graph_tensor *t, rn_element_type declared)
{
    if (t->type == RN_U16 && declared == RN_BF16)
        t->type = RN_BF16;
    for (size_t i = 0; i < t->n_items; i++)
        fix_bf16(&t->items[i], declared);
    if (t->kind == GRAPH_KIND_SEQUENCE && t->n_items > 0)
        t->type = t->items[0].type;
}

static verdict status_verdict(rn_status st)
{
    return st == RN_UNSUPPORTED ? UNSUPPORTED : FAIL;
}

/* ---- declared kinds of the model's inputs and outputs ----
 *
 * The .pb files of sequence and optional values parse as TensorProto too, so
 * what a file holds is read from the model's declaration of its value. */

typedef struct declared_value {
    const char *name;
    graph_kind kind;
    rn_element_type elem;
} declared_value;

typedef struct declared_io {
    Onnx__ModelProto *model;
    size_t n;
    declared_value *values;
} declared_io;

static void declared_type(const Onnx__TypeProto *tp, graph_kind *kind, rn_element_type *elem)
{
    *kind = GRAPH_KIND_TENSOR;
    *elem = RN_UNDEFINED;
    const Onnx__TypeProto *inner = tp;
    if (tp != NULL && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
        *kind = GRAPH_KIND_OPTIONAL;
        inner = tp->optional_type != NULL ? tp->optional_type->elem_type : NULL;
        if (inner != NULL && inner->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
            *kind = GRAPH_KIND_OPTIONAL_SEQUENCE;
    } else if (tp != NULL && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
        *kind = GRAPH_KIND_SEQUENCE;
    } else if (tp != NULL && tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE) {
        *kind = GRAPH_KIND_MAP;
    }
    if (inner != NULL && inner->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
        inner = inner->sequence_type != NULL ? inner->sequence_type->elem_type : NULL;
    if (inner != NULL && inner->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE) {
        if (*kind == GRAPH_KIND_SEQUENCE)
            *kind = GRAPH_KIND_SEQUENCE_MAP;
        inner = inner->map_type != NULL ? inner->map_type->value_type : NULL;
    }
    if (inner != NULL && inner->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
        inner->tensor_type != NULL && inner->tensor_type->has_elem_type)
        *elem = (rn_element_type)inner->tensor_type->elem_type;
}

/* Reads the declared types of the main graph's inputs and outputs (best
 * effort: nothing when the model does not parse). */
static void declared_read(const char *path, declared_io *io)
{
    memset(io, 0, sizeof *io);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
    size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    io->model = buf && got == (size_t)len ? onnx__model_proto__unpack(NULL, got, buf) : NULL;
    free(buf);
    if (io->model == NULL || io->model->graph == NULL)
        return;
    const Onnx__GraphProto *g = io->model->graph;
    io->values = calloc(g->n_input + g->n_output + 1, sizeof *io->values);
    if (io->values == NULL)
        return;
    for (size_t k = 0; k < g->n_input + g->n_output; k++) {
        const Onnx__ValueInfoProto *vi = k < g->n_input ? g->input[k] : g->output[k - g->n_input];
        declared_value *d = &io->values[io->n++];
        d->name = vi->name != NULL ? vi->name : "";
        declared_type(vi->type, &d->kind, &d->elem);
    }
}

static void declared_free(declared_io *io)
{
    if (io->model != NULL)
        onnx__model_proto__free_unpacked(io->model, NULL);
    free(io->values);
}

static const declared_value *declared_find(const declared_io *io, const char *name)
{
    for (size_t i = 0; i < io->n; i++)
        if (strcmp(io->values[i].name, name) == 0)
            return &io->values[i];
    return NULL;
}

/* Reads a value file as its declaration says, filling in the element type
 * that empty sequences and optionals without a value cannot carry. */
static rn_status read_value(const char *path, const declared_value *d, graph_tensor *out)
{
    graph_kind kind = d != NULL ? d->kind : GRAPH_KIND_TENSOR;
    rn_status st = onnx_read_value_file(path, kind, out);
    if (st == RN_OK && out->type == RN_UNDEFINED && d != NULL)
        out->type = d->elem;
    return st;
}

/* An rn_tensor holding a value read from a file (tensors wrap its buffer,
 * sequences and maps copy their items). */
static rn_status make_input(const graph_tensor *v, rn_tensor **out)
{
    if (v->kind == GRAPH_KIND_OPTIONAL || v->kind == GRAPH_KIND_OPTIONAL_SEQUENCE)
        return rn_tensor_create_none(v->type, v->kind == GRAPH_KIND_OPTIONAL_SEQUENCE, out);
    if (v->kind == GRAPH_KIND_TENSOR)
        return rn_tensor_wrap(v->type, v->dims, (size_t)v->rank, v->data, v->nbytes, out);
    if (v->kind == GRAPH_KIND_MAP) {
        rn_tensor *k = NULL, *val = NULL;
        rn_status st = make_input(&v->items[0], &k);
        if (st == RN_OK)
            st = make_input(&v->items[1], &val);
        if (st == RN_OK)
            st = rn_tensor_create_map(k, val, out);
        rn_tensor_free(k);
        rn_tensor_free(val);
        return st;
    }
    rn_tensor **items = calloc(v->n_items + 1, sizeof *items);
    if (items == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    rn_status st = RN_OK;
    for (size_t i = 0; i < v->n_items && st == RN_OK; i++) {
        st = make_input(&v->items[i], &items[i]);
    }
    if (st == RN_OK)
        st = rn_tensor_create_sequence(v->type, items, v->n_items, out);
    for (size_t i = 0; i < v->n_items; i++)
        rn_tensor_free(items[i]);
    free(items);
    return st;
}

/* Compares a map with the expected one: the same keys, in any order (ONNX
 * Runtime's maps are sorted by key), each with its value to the tolerance. */
static bool compare_map(const char *name, const rn_tensor *got, const graph_tensor *want, char *why,
                        size_t size)
{
    rn_tensor *keys, *values;
    if (rn_tensor_kind(got) != RN_VALUE_MAP || rn_tensor_map_keys(got, &keys) != RN_OK ||
        rn_tensor_map_values(got, &values) != RN_OK) {
        snprintf(why, size, "output '%s': is not a map", name);
        return false;
    }
    const graph_tensor *wk = &want->items[0], *wv = &want->items[1];
    size_t n = (size_t)wk->dims[0];
    if (rn_tensor_map_key_type(got) != wk->type || rn_tensor_map_size(got) != n) {
        snprintf(why, size, "output '%s': a map of %zu %s keys, expected %zu %s keys", name,
                 rn_tensor_map_size(got), rn_element_type_name(rn_tensor_map_key_type(got)), n,
                 rn_element_type_name(wk->type));
        return false;
    }
    size_t vsize = rn_element_type_size(wv->type);
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        for (; j < n; j++) {
            if (wk->type == RN_STRING
                    ? strcmp(rn_tensor_get_string(keys, j), ((char *const *)wk->data)[i]) == 0
                    : ((const int64_t *)rn_tensor_data(keys))[j] == ((const int64_t *)wk->data)[i])
                break;
        }
        char sub[300];
        if (wk->type == RN_STRING)
            snprintf(sub, sizeof sub, "%s{%s}", name, ((char *const *)wk->data)[i]);
        else
            snprintf(sub, sizeof sub, "%s{%lld}", name, (long long)((const int64_t *)wk->data)[i]);
        if (j == n) {
            snprintf(why, size, "output '%s': key missing", sub);
            return false;
        }
        if (wv->type == RN_STRING || vsize == 0 || rn_tensor_element_type(values) != wv->type) {
            snprintf(why, size, "output '%s': values of %s, expected %s", sub,
                     rn_element_type_name(rn_tensor_element_type(values)),
                     rn_element_type_name(wv->type));
            return false;
        }
        /* One element each: compare as scalars. */
        rn_tensor *g1;
        int64_t one = 1;
        graph_tensor w1 = {.type = wv->type,
                           .rank = 1,
                           .dims = {1},
                           .data = (char *)wv->data + i * vsize,
                           .nbytes = vsize};
        if (rn_tensor_wrap(wv->type, &one, 1, (char *)rn_tensor_data(values) + j * vsize, vsize,
                           &g1) != RN_OK) {
            snprintf(why, size, "output '%s': %s", sub, rn_last_error());
            return false;
        }
        bool ok = compare(sub, g1, &w1, why, size);
        rn_tensor_free(g1);
        if (!ok)
            return false;
    }
    return true;
}

/* Compares an output of any kind with the expected value. */
static bool compare_value(const char *name, const rn_tensor *got, const graph_tensor *want,
                          char *why, size_t size)
{
    rn_value_kind gk = rn_tensor_kind(got);
    if (want->kind == GRAPH_KIND_OPTIONAL || want->kind == GRAPH_KIND_OPTIONAL_SEQUENCE) {
        if (gk != RN_VALUE_NONE) {
            snprintf(why, size, "output '%s': has a value, expected an optional without one", name);
            return false;
        }
        return true;
    }
    if (want->kind == GRAPH_KIND_TENSOR) {
        if (gk != RN_VALUE_TENSOR) {
            snprintf(why, size, "output '%s': is a %s, expected a tensor", name,
                     gk == RN_VALUE_SEQUENCE ? "sequence"
                     : gk == RN_VALUE_MAP    ? "map"
                                             : "an optional without a value");
            return false;
        }
        return compare(name, got, want, why, size);
    }
    if (want->kind == GRAPH_KIND_MAP)
        return compare_map(name, got, want, why, size);
    if (gk != RN_VALUE_SEQUENCE) {
        snprintf(why, size, "output '%s': is not a sequence", name);
        return false;
    }
    if (rn_tensor_sequence_length(got) != want->n_items) {
        snprintf(why, size, "output '%s': holds %zu items, expected %zu", name,
                 rn_tensor_sequence_length(got), want->n_items);
        return false;
    }
    for (size_t i = 0; i < want->n_items; i++) {
        rn_tensor *item;
        rn_tensor_sequence_item(got, i, &item);
        char sub[300];
        snprintf(sub, sizeof sub, "%s[%zu]", name, i);
        if (want->kind == GRAPH_KIND_SEQUENCE_MAP
                ? !compare_map(sub, item, &want->items[i], why, size)
                : !compare(sub, item, &want->items[i], why, size))
            return false;
    }
    return true;
}

static verdict run_data_set(test_case *c, rn_infer_request *req, const rn_compiled_model *cm,
                            const declared_io *io, const char *set_dir)
{
    size_t n_in = rn_compiled_model_input_count(cm), n_out = rn_compiled_model_output_count(cm);
    graph_tensor *ins = calloc(n_in + 1, sizeof *ins);
    rn_tensor **wrapped = calloc(n_in + 1, sizeof *wrapped);
    verdict v = PASS;
    for (size_t i = 0; i < n_in && v == PASS; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/input_%zu.pb", set_dir, i);
        rn_port in_port;
        rn_compiled_model_input(cm, i, &in_port);
        rn_status st = read_value(p, declared_find(io, in_port.name), &ins[i]);
        if (st != RN_OK) {
            v = report(c, status_verdict(st), "input_%zu.pb: %s", i, rn_last_error());
            break;
        }
        fix_bf16(&ins[i], in_port.element_type);
        st = make_input(&ins[i], &wrapped[i]);
        if (st == RN_OK)
            st = rn_infer_request_set_input_tensor(req, i, wrapped[i]);
        if (st != RN_OK)
            v = report(c, status_verdict(st), "input %zu: %s: %s", i, rn_status_name(st),
                       rn_last_error());
    }
    if (v == PASS) {
        rn_status st = rn_infer_request_infer(req);
        if (st != RN_OK)
            v = report(c, status_verdict(st), "infer: %s: %s", rn_status_name(st), rn_last_error());
    }
    for (size_t o = 0; o < n_out && v == PASS; o++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/output_%zu.pb", set_dir, o);
        rn_port port;
        rn_compiled_model_output(cm, o, &port);
        graph_tensor want = {0};
        rn_status st = read_value(p, declared_find(io, port.name), &want);
        if (st != RN_OK) {
            v = report(c, FAIL, "output_%zu.pb: %s", o, rn_last_error());
            break;
        }
        rn_tensor *got;
        if ((st = rn_infer_request_get_output_tensor(req, o, &got)) != RN_OK) {
            v = report(c, FAIL, "output %zu: %s: %s", o, rn_status_name(st), rn_last_error());
            graph_tensor_release(&want);
            break;
        }
        fix_bf16(&want, rn_tensor_element_type(got));
        char why[400];
        if (!compare_value(port.name, got, &want, why, sizeof why))
            v = report(c, FAIL, "%s", why);
        graph_tensor_release(&want);
    }
    for (size_t i = 0; i < n_in; i++) {
        rn_tensor_free(wrapped[i]);
        graph_tensor_release(&ins[i]);
    }
    free(wrapped);
    free(ins);
    return v;
}

/* Light models: the one non-constant input is arange(n)/n as float32. */
static verdict run_light(test_case *c, rn_infer_request *req, const rn_compiled_model *cm)
{
    if (rn_compiled_model_input_count(cm) != 1 || rn_compiled_model_output_count(cm) != 1)
        return report(c, FAIL, "light model with %zu inputs and %zu outputs",
                      rn_compiled_model_input_count(cm), rn_compiled_model_output_count(cm));
    rn_tensor *in;
    rn_infer_request_get_input_tensor(req, 0, &in);
    size_t n = rn_tensor_element_count(in);
    float *x = rn_tensor_data(in);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((double)i / (double)n);
    rn_status st = rn_infer_request_infer(req);
    if (st != RN_OK)
        return report(c, status_verdict(st), "infer: %s: %s", rn_status_name(st), rn_last_error());
    graph_tensor want = {0};
    if ((st = onnx_read_tensor_file(c->light_output, &want)) != RN_OK)
        return report(c, FAIL, "%s: %s", c->light_output, rn_last_error());
    rn_tensor *got;
    rn_port port;
    rn_compiled_model_output(cm, 0, &port);
    rn_infer_request_get_output_tensor(req, 0, &got);
    char why[400];
    verdict v = compare(port.name, got, &want, why, sizeof why) ? PASS : report(c, FAIL, "%s", why);
    graph_tensor_release(&want);
    return v;
}

/* A case's own tolerance, for outputs of another runtime whose summation
 * order a model amplifies (tests/wild/real_models.py says why per case): a
 * file `tolerance` in the case's folder whose first line is "rtol R atol A"
 * replaces --rtol and --atol for that case. False when the file is there
 * but does not say that. */
static bool read_case_tolerance(const test_case *c)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tolerance", c->dir);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return true;
    double r, a;
    bool ok = fscanf(f, " rtol %lf atol %lf", &r, &a) == 2 && r >= 0 && a >= 0;
    fclose(f);
    if (ok) {
        rel_tol = r;
        abs_tol = a;
    }
    return ok;
}

static verdict run_case(test_case *c)
{
    rn_core *core = NULL;
    rn_model *model = NULL;
    rn_compiled_model *cm = NULL;
    rn_infer_request *req = NULL;
    verdict v = PASS;
    rn_status st = rn_core_create(&core);
    if (st != RN_OK)
        return report(c, FAIL, "core: %s", rn_last_error());
    if ((st = rn_core_read_model(core, c->model, &model)) != RN_OK) {
        v = report(c, status_verdict(st), "read: %s: %s", rn_status_name(st), rn_last_error());
        goto done;
    }
    if ((st = rn_core_compile_model(core, model, device, properties, n_properties, &cm)) != RN_OK) {
        v = report(c, status_verdict(st), "compile: %s: %s", rn_status_name(st), rn_last_error());
        goto done;
    }
    if ((st = rn_compiled_model_create_infer_request(cm, &req)) != RN_OK) {
        v = report(c, status_verdict(st), "request: %s: %s", rn_status_name(st), rn_last_error());
        goto done;
    }
    if (c->light_output != NULL) {
        v = run_light(c, req, cm);
        goto done;
    }
    int sets = 0;
    declared_io io;
    declared_read(c->model, &io);
    double saved_rtol = rel_tol, saved_atol = abs_tol;
    if (!read_case_tolerance(c)) {
        v = report(c, FAIL, "%s/tolerance: expected \"rtol R atol A\" on its first line", c->dir);
        declared_free(&io);
        goto done;
    }
    for (int k = 0; v == PASS; k++) {
        char set_dir[4096];
        snprintf(set_dir, sizeof set_dir, "%s/test_data_set_%d", c->dir, k);
        if (!is_dir(set_dir))
            break;
        sets++;
        v = run_data_set(c, req, cm, &io, set_dir);
    }
    declared_free(&io);
    rel_tol = saved_rtol;
    abs_tol = saved_atol;
    if (v == PASS && sets == 0)
        v = report(c, FAIL, "no test_data_set_* folder");
done:
    rn_infer_request_free(req);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    if (v == PASS)
        c->reason[0] = '\0';
    return v;
}

/* Runs a case in a child process with a time limit; the child writes
 * "<verdict> <reason>" to a pipe. */
static void run_isolated(test_case *c)
{
    if (!use_fork) {
        run_case(c);
        return;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        report(c, FAIL, "pipe: %s", strerror(errno));
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        report(c, FAIL, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        result_fd = fds[1];
        verdict v = run_case(c);
        char line[600];
        int len = snprintf(line, sizeof line, "%d %s", (int)v, c->reason);
        if (write(result_fd, line, (size_t)(len < (int)sizeof line ? len : (int)sizeof line - 1)) <
            0)
            _exit(3);
        _exit(0);
    }
    close(fds[1]);
    char buf[600];
    size_t got = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool timed_out = false;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double left = time_limit_s -
                      ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t k = read(fds[0], buf + got, sizeof buf - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    buf[got] = '\0';
    if (timed_out) {
        report(c, FAIL, "timed out after %.0f s", time_limit_s);
    } else if (WIFSIGNALED(status)) {
        report(c, FAIL, "crashed: signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (got == 0 || WEXITSTATUS(status) != 0) {
        report(c, FAIL, "child exited with status %d and no result", WEXITSTATUS(status));
    } else {
        char *space = strchr(buf, ' ');
        c->result = (verdict)atoi(buf);
        snprintf(c->reason, sizeof c->reason, "%s", space ? space + 1 : "");
    }
}

/* ---- main ---- */

static int row_index(op_row *rows, int *n_rows, const char *op)
{
    for (int i = 0; i < *n_rows; i++)
        if (strcmp(rows[i].op, op) == 0)
            return i;
    if (*n_rows == MAX_OPS)
        return -1;
    snprintf(rows[*n_rows].op, sizeof rows[*n_rows].op, "%s", op);
    memset(rows[*n_rows].counts, 0, sizeof rows[*n_rows].counts);
    return (*n_rows)++;
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const op_row *)a)->op, ((const op_row *)b)->op);
}

static void usage(void)
{
    fprintf(stderr, "usage: onnx --device DEV [--expected FILE] [--write-expected FILE] "
                    "[--baseline FILE] [--write-passing FILE] "
                    "[--filter SUBSTR] [--rtol R] [--atol A] [--timeout SECONDS] "
                    "[--property KEY=VALUE] [--no-fork] "
                    "[--verbose] DIR...\n");
    exit(2);
}

static char **read_lines(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "cannot open baseline %s: %s\n", path, strerror(errno));
        exit(2);
    }
    char **lines = NULL;
    char line[1024];
    *n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        lines = realloc(lines, (*n + 1) * sizeof *lines);
        lines[(*n)++] = xstrdup(line);
    }
    fclose(f);
    return lines;
}

static const test_case *find_case(const char *name)
{
    test_case key = {.name = (char *)name};
    return bsearch(&key, cases, (size_t)n_cases, sizeof cases[0], cmp_case);
}

/* --expected FILE against the results (cases sorted by name). Prints one line
 * per difference and the "conformance: ..." count; returns 1 when a
 * difference must fail the run. */
static int check_expected(const char *path, const char *filter)
{
    size_t n;
    char **lines = read_lines(path, &n);
    verdict *listed = calloc((size_t)n_cases + 1, sizeof *listed);
    bool *is_listed = calloc((size_t)n_cases + 1, sizeof *is_listed);
    int unexpected = 0, now_pass = 0;
    for (size_t k = 0; k < n; k++) {
        char verdict_name[16], name[512];
        if (sscanf(lines[k], "%15s %511s", verdict_name, name) != 2 ||
            (strcmp(verdict_name, "FAIL") != 0 && strcmp(verdict_name, "UNSUPPORTED") != 0)) {
            fprintf(stderr, "%s: line '%s' is not 'FAIL NAME' or 'UNSUPPORTED NAME'\n", path,
                    lines[k]);
            exit(2);
        }
        free(lines[k]);
        if (filter != NULL && strstr(name, filter) == NULL)
            continue;
        const test_case *c = find_case(name);
        if (c == NULL) {
            printf("unexpected: listed case not found: %s\n", name);
            unexpected++;
            continue;
        }
        size_t i = (size_t)(c - cases);
        is_listed[i] = true;
        listed[i] = strcmp(verdict_name, "FAIL") == 0 ? FAIL : UNSUPPORTED;
    }
    free(lines);
    int passed = 0, expected_fail = 0, expected_unsup = 0;
    for (int i = 0; i < n_cases; i++) {
        const test_case *c = &cases[i];
        if (filter != NULL && strstr(c->name, filter) == NULL)
            continue;
        if (c->result == PASS) {
            passed++;
            if (is_listed[i]) {
                printf("listed case now passes (remove it from the list): %s\n", c->name);
                now_pass++;
            }
        } else if (!is_listed[i]) {
            printf("unexpected %s: %s [%s] %s\n", verdict_names[c->result], c->name, c->ops,
                   c->reason);
            unexpected++;
        } else if (listed[i] == UNSUPPORTED && c->result == FAIL) {
            printf("unexpected FAIL (listed as UNSUPPORTED): %s [%s] %s\n", c->name, c->ops,
                   c->reason);
            unexpected++;
        } else if (c->result == UNSUPPORTED) {
            if (listed[i] == FAIL)
                printf("listed case now UNSUPPORTED instead of FAIL (update the list): %s\n",
                       c->name);
            expected_unsup++;
        } else {
            expected_fail++;
        }
    }
    free(listed);
    free(is_listed);
    printf("conformance: %d passed, %d unexpected, %d expected failures, %d unsupported, "
           "%d listed now pass\n",
           passed, unexpected, expected_fail, expected_unsup, now_pass);
    return unexpected ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *baseline = NULL, *write_passing = NULL, *filter = NULL;
    const char *expected = NULL, *write_expected = NULL;
    /* Line-buffered: a long run shows its progress, and a child never
     * inherits unwritten lines. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    int first_dir = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            device = argv[++i];
        else if (strcmp(argv[i], "--baseline") == 0 && i + 1 < argc)
            baseline = argv[++i];
        else if (strcmp(argv[i], "--expected") == 0 && i + 1 < argc)
            expected = argv[++i];
        else if (strcmp(argv[i], "--write-expected") == 0 && i + 1 < argc)
            write_expected = argv[++i];
        else if (strcmp(argv[i], "--write-passing") == 0 && i + 1 < argc)
            write_passing = argv[++i];
        else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
            filter = argv[++i];
        else if (strcmp(argv[i], "--rtol") == 0 && i + 1 < argc)
            rel_tol = atof(argv[++i]);
        else if (strcmp(argv[i], "--atol") == 0 && i + 1 < argc)
            abs_tol = atof(argv[++i]);
        else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            time_limit_s = atof(argv[++i]);
        else if (strcmp(argv[i], "--property") == 0 && i + 1 < argc &&
                 strchr(argv[i + 1], '=') != NULL && n_properties < MAX_PROPERTIES) {
            char *kv = argv[++i];
            char *eq = strchr(kv, '=');
            *eq = '\0';
            properties[n_properties++] = (rn_property){kv, eq + 1};
        } else if (strcmp(argv[i], "--no-fork") == 0)
            use_fork = false;
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = true;
        else if (argv[i][0] == '-')
            usage();
        else {
            first_dir = i;
            break;
        }
    }
    if (first_dir >= argc)
        usage();
    for (int i = first_dir; i < argc; i++) {
        if (!is_dir(argv[i])) {
            fprintf(stderr, "%s: not a folder\n", argv[i]);
            return 2;
        }
        discover(argv[i], 1);
    }
    qsort(cases, (size_t)n_cases, sizeof cases[0], cmp_case);
    int counts[3] = {0};
    op_row *rows = calloc(MAX_OPS, sizeof *rows);
    int n_rows = 0;
    int ran = 0;
    for (int i = 0; i < n_cases; i++) {
        test_case *c = &cases[i];
        if (filter != NULL && strstr(c->name, filter) == NULL)
            continue;
        ran++;
        model_ops(c->model, c->ops, sizeof c->ops);
        run_isolated(c);
        counts[c->result]++;
        if (c->result != PASS || verbose)
            printf("%-11s %s [%s] %s\n", verdict_names[c->result], c->name, c->ops, c->reason);
        char ops[256];
        snprintf(ops, sizeof ops, "%s", c->ops[0] ? c->ops : "(none)");
        for (char *tok = strtok(ops, " "); tok != NULL; tok = strtok(NULL, " ")) {
            int r = row_index(rows, &n_rows, tok);
            if (r >= 0)
                rows[r].counts[c->result]++;
        }
    }
    qsort(rows, (size_t)n_rows, sizeof *rows, cmp_row);
    printf("\n%-28s %6s %6s %6s\n", "op", "pass", "fail", "unsup");
    for (int i = 0; i < n_rows; i++)
        printf("%-28s %6d %6d %6d\n", rows[i].op, rows[i].counts[PASS], rows[i].counts[FAIL],
               rows[i].counts[UNSUPPORTED]);
    free(rows);
    int exit_code = counts[FAIL] ? 1 : 0;
    if (baseline != NULL) {
        size_t n;
        char **names = read_lines(baseline, &n);
        size_t missing = 0;
        for (size_t k = 0; k < n; k++) {
            bool passed = false;
            bool found = false;
            for (int i = 0; i < n_cases; i++)
                if (strcmp(cases[i].name, names[k]) == 0) {
                    found = true;
                    passed = cases[i].result == PASS &&
                             (filter == NULL || strstr(cases[i].name, filter) != NULL);
                }
            if (found && !passed) {
                printf("baseline case no longer passes: %s\n", names[k]);
                missing++;
            } else if (!found) {
                printf("baseline case not found: %s\n", names[k]);
                missing++;
            }
            free(names[k]);
        }
        free(names);
        printf("baseline: %zu of %zu cases still pass\n", n - missing, n);
        exit_code = missing ? 1 : 0;
    }
    if (expected != NULL) {
        /* The listed FAILs are expected: the status says whether anything
         * else differs (and, with --baseline too, whether its cases pass). */
        int differs = check_expected(expected, filter);
        exit_code = differs || (baseline != NULL && exit_code);
    }
    if (write_expected != NULL) {
        FILE *f = fopen(write_expected, "w");
        if (f == NULL) {
            fprintf(stderr, "cannot write %s: %s\n", write_expected, strerror(errno));
            return 2;
        }
        fprintf(f, "# Cases of this corpus that do not pass on %s (onnx --write-expected).\n",
                device);
        for (int i = 0; i < n_cases; i++)
            if (cases[i].result != PASS && (filter == NULL || strstr(cases[i].name, filter)))
                fprintf(f, "%s %s\n", verdict_names[cases[i].result], cases[i].name);
        fclose(f);
    }
    if (write_passing != NULL) {
        FILE *f = fopen(write_passing, "w");
        if (f == NULL) {
            fprintf(stderr, "cannot write %s: %s\n", write_passing, strerror(errno));
            return 2;
        }
        for (int i = 0; i < n_cases; i++)
            if (cases[i].result == PASS && (filter == NULL || strstr(cases[i].name, filter)))
                fprintf(f, "%s\n", cases[i].name);
        fclose(f);
    }
    printf("\n%d passed, %d failed, %d unsupported\n", counts[PASS], counts[FAIL],
           counts[UNSUPPORTED]);
    (void)ran;
    return exit_code;
}
