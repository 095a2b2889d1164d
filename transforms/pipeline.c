/* The pass manager: named passes in order, enabled or disabled by name or by
 * a configuration string, REPEAT passes run to a fixed point; and the
 * default pipeline. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transforms/transforms.h"

typedef struct pipeline_pass {
    char name[TRANSFORMS_NAME_MAX];
    transforms_pass_fn fn;
    void *ctx;
    unsigned flags;
    bool enabled;
} pipeline_pass;

struct transforms_pipeline {
    int n;
    pipeline_pass passes[TRANSFORMS_MAX_PASSES];
    /* The default pipeline's copy of its options: its passes' ctx point here. */
    transforms_fold_options fold;
};

rn_status transforms_pipeline_create(transforms_pipeline **out)
{
    transforms_pipeline *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    *out = p;
    return RN_OK;
}

void transforms_pipeline_free(transforms_pipeline *p)
{
    free(p);
}

static bool valid_name(const char *name)
{
    size_t n = name != NULL ? strlen(name) : 0;
    if (n == 0 || n >= TRANSFORMS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

/* Index of the pass named name[0..len), or -1. */
static int find_pass(const transforms_pipeline *p, const char *name, size_t len)
{
    for (int i = 0; i < p->n; i++)
        if (strlen(p->passes[i].name) == len && memcmp(p->passes[i].name, name, len) == 0)
            return i;
    return -1;
}

/* Writes the pass names, "a, b, c", into buf (cut to fit) for error messages. */
static const char *pass_list(const transforms_pipeline *p, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->n && pos + 1 < size; i++) {
        size_t len = strlen(p->passes[i].name);
        const char *sep = i ? ", " : "";
        if (pos + strlen(sep) + len + 1 > size)
            break;
        memcpy(buf + pos, sep, strlen(sep));
        pos += strlen(sep);
        memcpy(buf + pos, p->passes[i].name, len);
        pos += len;
        buf[pos] = '\0';
    }
    return buf;
}

rn_status transforms_pipeline_add(transforms_pipeline *p, const char *name, transforms_pass_fn fn,
                                  void *ctx, unsigned flags)
{
    if (!valid_name(name))
        return rn_set_error(RN_INVALID_ARG,
                            "transforms: pass name '%s' is not 1 to %d characters of [a-z0-9_]",
                            name != NULL ? name : "(null)", TRANSFORMS_NAME_MAX - 1);
    if (fn == NULL)
        return rn_set_error(RN_INVALID_ARG, "transforms: pass '%s' has no function", name);
    if (find_pass(p, name, strlen(name)) >= 0)
        return rn_set_error(RN_INVALID_ARG, "transforms: pass '%s' is already in the pipeline",
                            name);
    if (p->n == TRANSFORMS_MAX_PASSES)
        return rn_set_error(RN_INVALID_ARG, "transforms: pass '%s': the pipeline is full (%d)",
                            name, TRANSFORMS_MAX_PASSES);
    pipeline_pass *pass = &p->passes[p->n++];
    memset(pass, 0, sizeof *pass);
    memcpy(pass->name, name, strlen(name) + 1);
    pass->fn = fn;
    pass->ctx = ctx;
    pass->flags = flags;
    pass->enabled = !(flags & TRANSFORMS_DISABLED);
    return RN_OK;
}

static rn_status unknown_pass(const transforms_pipeline *p, const char *name, size_t len);

rn_status transforms_pipeline_insert_before(transforms_pipeline *p, const char *before,
                                            const char *name, transforms_pass_fn fn, void *ctx,
                                            unsigned flags)
{
    int at = before != NULL ? find_pass(p, before, strlen(before)) : -1;
    if (at < 0)
        return unknown_pass(p, before != NULL ? before : "(null)",
                            before != NULL ? strlen(before) : 6);
    rn_status st = transforms_pipeline_add(p, name, fn, ctx, flags);
    if (st != RN_OK)
        return st;
    pipeline_pass added = p->passes[p->n - 1];
    memmove(&p->passes[at + 1], &p->passes[at], sizeof added * (size_t)(p->n - 1 - at));
    p->passes[at] = added;
    return RN_OK;
}

static rn_status unknown_pass(const transforms_pipeline *p, const char *name, size_t len)
{
    char list[512];
    return rn_set_error(RN_NOT_FOUND, "transforms: no pass named '%.*s' (the pipeline has: %s)",
                        (int)len, name, pass_list(p, list, sizeof list));
}

rn_status transforms_pipeline_set_enabled(transforms_pipeline *p, const char *name, bool enabled)
{
    int i = name != NULL ? find_pass(p, name, strlen(name)) : -1;
    if (i < 0)
        return unknown_pass(p, name != NULL ? name : "(null)", name != NULL ? strlen(name) : 6);
    p->passes[i].enabled = enabled;
    return RN_OK;
}

rn_status transforms_pipeline_is_enabled(const transforms_pipeline *p, const char *name,
                                         bool *enabled)
{
    int i = name != NULL ? find_pass(p, name, strlen(name)) : -1;
    if (i < 0)
        return unknown_pass(p, name != NULL ? name : "(null)", name != NULL ? strlen(name) : 6);
    *enabled = p->passes[i].enabled;
    return RN_OK;
}

/* Applies (or with apply false, only checks) a configuration string. */
static rn_status configure(transforms_pipeline *p, const char *config, bool apply)
{
    const char *s = config;
    for (;;) {
        const char *end = strchr(s, ',');
        if (end == NULL)
            end = s + strlen(s);
        const char *a = s, *b = end;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        bool enable = true;
        if (a < b && (*a == '+' || *a == '-')) {
            enable = *a == '+';
            a++;
        }
        if (a == b)
            return rn_set_error(RN_INVALID_ARG,
                                "transforms: pass configuration '%s' has an empty entry", config);
        if (b - a == 1 && *a == '*') {
            for (int i = 0; apply && i < p->n; i++)
                p->passes[i].enabled = enable;
        } else {
            int i = find_pass(p, a, (size_t)(b - a));
            if (i < 0)
                return rn_wrap_error(unknown_pass(p, a, (size_t)(b - a)),
                                     "pass configuration '%s': ", config);
            if (apply)
                p->passes[i].enabled = enable;
        }
        if (*end == '\0')
            return RN_OK;
        s = end + 1;
    }
}

rn_status transforms_pipeline_configure(transforms_pipeline *p, const char *config)
{
    if (config == NULL)
        return rn_set_error(RN_INVALID_ARG, "transforms: pass configuration is NULL");
    rn_status st = configure(p, config, false);
    return st != RN_OK ? st : configure(p, config, true);
}

int transforms_pipeline_count(const transforms_pipeline *p)
{
    return p->n;
}

const char *transforms_pipeline_name(const transforms_pipeline *p, int i)
{
    return i >= 0 && i < p->n ? p->passes[i].name : NULL;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

rn_status transforms_pipeline_run(const transforms_pipeline *p, graph *g, transforms_report *report)
{
    transforms_report local;
    transforms_report *rep = report != NULL ? report : &local;
    memset(rep, 0, sizeof *rep);
    rep->n_passes = p->n;
    for (int i = 0; i < p->n; i++) {
        memcpy(rep->passes[i].name, p->passes[i].name, sizeof rep->passes[i].name);
        rep->passes[i].enabled = p->passes[i].enabled;
    }
    rn_status st = graph_sort(g);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < p->n; i++) {
        const pipeline_pass *pass = &p->passes[i];
        transforms_pass_report *r = &rep->passes[i];
        if (!pass->enabled)
            continue;
        uint64_t t0 = now_us();
        int changes;
        do {
            changes = 0;
            st = pass->fn(g, pass->ctx, &changes);
            r->runs++;
            if (st != RN_OK) {
                r->time_us = now_us() - t0;
                return rn_wrap_error(st, "pass '%s': ", pass->name);
            }
            r->changes += changes;
        } while ((pass->flags & TRANSFORMS_REPEAT) && changes > 0 &&
                 r->runs < TRANSFORMS_MAX_REPEAT);
        r->fixed_point = changes == 0;
        r->time_us = now_us() - t0;
    }
    return RN_OK;
}

rn_status transforms_default_pipeline(const transforms_options *options, transforms_pipeline **out)
{
    transforms_options none = {0};
    const transforms_options *o = options != NULL ? options : &none;
    transforms_pipeline *p = NULL;
    rn_status st = transforms_pipeline_create(&p);
    if (st != RN_OK)
        return st;
    p->fold.eval = o->const_eval;
    p->fold.eval_ctx = o->const_eval_ctx;
    p->fold.max_tensor_bytes = o->fold_max_tensor_bytes;
    /* The preprocess description is borrowed: the pass's ctx is the caller's. */
    void *preprocess = (void *)o->preprocess;
    if ((st = transforms_pipeline_add(p, "add_preprocessing", transforms_add_preprocessing,
                                      preprocess, 0)) != RN_OK ||
        (st = transforms_pipeline_add(p, "remove_identity", transforms_remove_identity, NULL,
                                      TRANSFORMS_REPEAT)) != RN_OK ||
        (st = transforms_pipeline_add(p, "fuse_relu_relu", transforms_fuse_relu_relu, NULL,
                                      TRANSFORMS_REPEAT)) != RN_OK ||
        (st = transforms_pipeline_add(p, "decompose_divide", transforms_decompose_divide, NULL,
                                      TRANSFORMS_DISABLED)) != RN_OK ||
        (st = transforms_pipeline_add(p, "constant_folding", transforms_fold_constants, &p->fold,
                                      0)) != RN_OK ||
        (st = transforms_pipeline_add(p, "eliminate_dead_nodes", transforms_eliminate_dead_nodes,
                                      NULL, 0)) != RN_OK) {
        transforms_pipeline_free(p);
        return st;
    }
    *out = p;
    return RN_OK;
}
