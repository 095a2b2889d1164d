/* Pre- and post-processing insertion: what the user declared on the model's
 * inputs (element type, layout, mean, scale) and outputs (element type)
 * becomes graph nodes, so a plugin sees one graph. The whole description is
 * checked before the graph changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

/* What one input's declaration amounts to, worked out before any change. */
typedef struct input_plan {
    const transforms_input_preprocess *d;
    graph_value *param;
    rn_element_type model_type, user_type;
    graph_shape model_shape, user_shape;
    bool transpose;
    int64_t perm[RN_MAX_RANK]; /* model dim i is user dim perm[i] */
    int channel_axis;          /* in the user's layout; -1: none */
} input_plan;

static bool is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

/* ---- checking ---- */

static rn_status check_layout(const char *input, const char *what, const char *layout, int rank)
{
    int n = (int)strlen(layout);
    if (rank < 0)
        return rn_set_error(RN_INVALID_ARG,
                            "preprocessing of input '%s': %s '%s' given, but the input's rank is "
                            "unknown",
                            input, what, layout);
    if (n != rank)
        return rn_set_error(RN_INVALID_ARG,
                            "preprocessing of input '%s': %s '%s' has %d letters, the input has "
                            "rank %d",
                            input, what, layout, n, rank);
    for (int i = 0; i < n; i++) {
        if (layout[i] < 'A' || layout[i] > 'Z' || strchr(layout + i + 1, layout[i]) != NULL)
            return rn_set_error(RN_INVALID_ARG,
                                "preprocessing of input '%s': %s '%s' must be distinct capital "
                                "letters, one per dim",
                                input, what, layout);
    }
    return RN_OK;
}

/* The model layout implied by the user's: N, C, then the other letters in
 * their order ("NHWC" -> "NCHW"). */
static void derive_model_layout(const char *user, char *out)
{
    size_t k = 0;
    if (strchr(user, 'N') != NULL)
        out[k++] = 'N';
    if (strchr(user, 'C') != NULL)
        out[k++] = 'C';
    for (const char *c = user; *c; c++)
        if (*c != 'N' && *c != 'C')
            out[k++] = *c;
    out[k] = '\0';
}

static rn_status check_values(const char *input, const char *what, int n, const float *v,
                              const input_plan *p)
{
    if (n == 0)
        return RN_OK;
    if (n < 0 || v == NULL)
        return rn_set_error(RN_INVALID_ARG, "preprocessing of input '%s': %s has %d values%s",
                            input, what, n, v == NULL ? " and no data" : "");
    if (!is_float(p->model_type))
        return rn_set_error(RN_INVALID_ARG,
                            "preprocessing of input '%s': %s needs a floating-point model input, "
                            "not %s",
                            input, what, rn_element_type_name(p->model_type));
    if (n > 1) {
        if (p->channel_axis < 0)
            return rn_set_error(RN_INVALID_ARG,
                                "preprocessing of input '%s': %d %s values, but no layout says "
                                "which dim is the channel ('C')",
                                input, n, what);
        int64_t c = p->user_shape.dims[p->channel_axis];
        if (c >= 0 && c != n)
            return rn_set_error(RN_INVALID_ARG,
                                "preprocessing of input '%s': %d %s values for %lld channels "
                                "(give 1 or %lld)",
                                input, n, what, (long long)c, (long long)c);
    }
    if (strcmp(what, "scale") == 0)
        for (int i = 0; i < n; i++)
            if (v[i] == 0.0f)
                return rn_set_error(RN_INVALID_ARG,
                                    "preprocessing of input '%s': scale value %d is zero", input,
                                    i);
    return RN_OK;
}

static rn_status plan_input(const graph *g, const transforms_input_preprocess *d, input_plan *p)
{
    memset(p, 0, sizeof *p);
    p->d = d;
    const char *name = d->name != NULL ? d->name : "(null)";
    for (int i = 0; i < g->n_inputs && d->name != NULL; i++)
        if (strcmp(g->inputs[i]->name, d->name) == 0)
            p->param = g->inputs[i];
    if (p->param == NULL)
        return rn_set_error(RN_INVALID_ARG, "preprocessing: the model has no input named '%s'",
                            name);
    p->model_type = p->param->type;
    p->model_shape = p->param->shape;
    p->user_shape = p->param->shape;
    p->user_type = d->type != RN_UNDEFINED ? d->type : p->model_type;
    if (d->type != RN_UNDEFINED && (!rn_element_type_is_valid(d->type) || d->type == RN_STRING))
        return rn_set_error(RN_INVALID_ARG,
                            "preprocessing of input '%s': element type %d cannot be fed", name,
                            (int)d->type);
    if (p->user_type != p->model_type && p->model_type == RN_UNDEFINED)
        return rn_set_error(RN_INVALID_ARG,
                            "preprocessing of input '%s': the model does not declare the input's "
                            "element type, so it cannot be converted",
                            name);
    int rank = p->model_shape.rank;
    char model_layout[RN_MAX_RANK + 1];
    const char *user_layout = d->layout;
    rn_status st;
    if (user_layout != NULL) {
        if ((st = check_layout(name, "layout", user_layout, rank)) != RN_OK)
            return st;
        if (d->model_layout != NULL) {
            if ((st = check_layout(name, "model layout", d->model_layout, rank)) != RN_OK)
                return st;
            memcpy(model_layout, d->model_layout, (size_t)rank + 1);
        } else {
            derive_model_layout(user_layout, model_layout);
        }
        for (int i = 0; i < rank; i++) {
            const char *at = strchr(user_layout, model_layout[i]);
            if (at == NULL)
                return rn_set_error(RN_INVALID_ARG,
                                    "preprocessing of input '%s': layout '%s' and model layout "
                                    "'%s' do not have the same letters",
                                    name, user_layout, model_layout);
            p->perm[i] = at - user_layout;
            p->transpose |= p->perm[i] != i;
            p->user_shape.dims[p->perm[i]] = p->model_shape.dims[i];
        }
        const char *c = strchr(user_layout, 'C');
        p->channel_axis = c != NULL ? (int)(c - user_layout) : -1;
    } else if (d->model_layout != NULL) {
        if ((st = check_layout(name, "model layout", d->model_layout, rank)) != RN_OK)
            return st;
        const char *c = strchr(d->model_layout, 'C');
        p->channel_axis = c != NULL ? (int)(c - d->model_layout) : -1;
    } else {
        p->channel_axis = rank >= 2 ? 1 : -1; /* channels first, as ONNX models are */
    }
    if ((st = check_values(name, "mean", d->n_mean, d->mean, p)) != RN_OK ||
        (st = check_values(name, "scale", d->n_scale, d->scale, p)) != RN_OK)
        return st;
    return RN_OK;
}

static bool input_has_work(const input_plan *p)
{
    return p->user_type != p->model_type || p->transpose || p->d->n_mean > 0 || p->d->n_scale > 0;
}

/* The result named d->name, checked: converting it needs a node to write it. */
static rn_status plan_output(const graph *g, const transforms_output_postprocess *d,
                             graph_value **out)
{
    const char *name = d->name != NULL ? d->name : "(null)";
    graph_value *r = NULL;
    for (int i = 0; i < g->n_outputs && d->name != NULL; i++)
        if (strcmp(g->outputs[i]->name, d->name) == 0)
            r = g->outputs[i];
    if (r == NULL)
        return rn_set_error(RN_INVALID_ARG, "postprocessing: the model has no output named '%s'",
                            name);
    if (!rn_element_type_is_valid(d->type) || d->type == RN_STRING)
        return rn_set_error(RN_INVALID_ARG,
                            "postprocessing of output '%s': element type %d cannot be returned",
                            name, (int)d->type);
    bool local = r->producer != NULL && r->id < g->n_values && g->values[r->id] == r;
    if (d->type != r->type && !local)
        return rn_set_error(RN_INVALID_ARG,
                            "postprocessing of output '%s': it is a model input or a constant, "
                            "not computed by a node, so its element type cannot be converted",
                            name);
    *out = r;
    return RN_OK;
}

/* ---- building ---- */

/* f32 -> f16 / bf16, rounding to nearest even (graph/ cannot use the
 * plugins' helpers). */
static uint16_t to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int exp = (int)((x >> 23) & 0xff);
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    exp = exp - 127 + 15;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - exp;
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* a carry into the exponent is still right, up to infinity */
    return (uint16_t)(sign | h);
}

static uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* A constant of the model's element type holding n per-channel values:
 * a scalar for one value, else shaped 1 everywhere but the channel axis. */
static rn_status channel_constant(graph *g, const input_plan *p, const char *suffix, const float *v,
                                  int n, graph_value **out)
{
    graph_tensor t = {.type = p->model_type};
    if (n > 1) {
        t.rank = p->user_shape.rank;
        for (int d = 0; d < t.rank; d++)
            t.dims[d] = d == p->channel_axis ? n : 1;
    }
    t.nbytes = (size_t)n * rn_element_type_size(t.type);
    t.data = malloc(t.nbytes);
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "preprocessing: out of memory");
    for (int i = 0; i < n; i++) {
        if (t.type == RN_F32) {
            ((float *)t.data)[i] = v[i];
        } else if (t.type == RN_F64) {
            ((double *)t.data)[i] = v[i];
        } else {
            ((uint16_t *)t.data)[i] = t.type == RN_F16 ? to_f16(v[i]) : to_bf16(v[i]);
        }
    }
    return transforms_add_constant(g, p->param->name, suffix, &t, out);
}

/* Appends node `op` named <base><suffix> reading in0 (and in1) into a new
 * value of the same name with the given type and shape. */
static rn_status add_step(graph *g, const char *base, const char *suffix, const char *op,
                          graph_value *in0, graph_value *in1, rn_element_type type,
                          const graph_shape *shape, graph_node **node, graph_value **out)
{
    char *name;
    graph_value *v;
    rn_status st = transforms_unique_name(g, base, suffix, &name);
    if (st != RN_OK)
        return st;
    graph_value *ins[2] = {in0, in1};
    if ((st = graph_add_value(g, name, &v)) == RN_OK)
        st = graph_add_node(g, name, "", op, transforms_new_node_opset(g), in1 != NULL ? 2 : 1, ins,
                            1, &v, node);
    free(name);
    if (st != RN_OK)
        return st;
    v->type = type;
    v->shape = *shape;
    *out = v;
    return RN_OK;
}

static rn_status apply_input(graph *g, const input_plan *p, int *added)
{
    graph_value *param = p->param, *cur = param, *k;
    graph_node *first = NULL, *node = NULL;
    const char *base = param->name;
    rn_status st = RN_OK;
    if (p->user_type != p->model_type) {
        st = add_step(g, base, "/convert_element_type", "Cast", cur, NULL, p->model_type,
                      &p->user_shape, &node, &cur);
        if (st == RN_OK)
            st = transforms_set_attr_int(node, "to", p->model_type);
        first = first != NULL ? first : node;
        ++*added;
    }
    if (st == RN_OK && p->d->n_mean > 0) {
        st = channel_constant(g, p, "/mean_value", p->d->mean, p->d->n_mean, &k);
        if (st == RN_OK)
            st = add_step(g, base, "/mean", "Sub", cur, k, p->model_type, &p->user_shape, &node,
                          &cur);
        first = first != NULL ? first : node;
        ++*added;
    }
    if (st == RN_OK && p->d->n_scale > 0) {
        st = channel_constant(g, p, "/scale_value", p->d->scale, p->d->n_scale, &k);
        if (st == RN_OK)
            st = add_step(g, base, "/scale", "Div", cur, k, p->model_type, &p->user_shape, &node,
                          &cur);
        first = first != NULL ? first : node;
        ++*added;
    }
    if (st == RN_OK && p->transpose) {
        st = add_step(g, base, "/convert_layout", "Transpose", cur, NULL, p->model_type,
                      &p->model_shape, &node, &cur);
        if (st == RN_OK)
            st = transforms_set_attr_ints(node, "perm", p->perm, p->model_shape.rank);
        first = first != NULL ? first : node;
        ++*added;
    }
    if (st != RN_OK || first == NULL)
        return st;
    /* The model's readers of the parameter read the last step instead; the
     * first step goes on reading the parameter, which now has the user's
     * element type and shape. */
    transforms_replace_uses(g, param, cur);
    first->inputs[0] = param;
    param->type = p->user_type;
    param->shape = p->user_shape;
    return RN_OK;
}

static rn_status apply_output(graph *g, graph_value *r, rn_element_type type, int *added)
{
    if (r->type == type)
        return RN_OK;
    char *name;
    graph_value *inner;
    graph_node *cast;
    rn_status st = transforms_unique_name(g, r->name, "/model_output", &name);
    if (st != RN_OK)
        return st;
    st = graph_add_value(g, name, &inner);
    free(name);
    if (st != RN_OK)
        return st;
    /* The producer writes a new inner value that its other readers read; the
     * Cast writes the result, which keeps its name. */
    graph_node *producer = r->producer;
    int k = r->producer_output;
    inner->type = r->type;
    inner->shape = r->shape;
    producer->outputs[k] = inner;
    inner->producer = producer;
    inner->producer_output = k;
    r->producer = NULL;
    transforms_replace_uses(g, r, inner);
    if ((st = transforms_unique_name(g, r->name, "/convert_element_type", &name)) != RN_OK)
        return st;
    st = graph_add_node(g, name, "", "Cast", transforms_new_node_opset(g), 1, &inner, 1, &r, &cast);
    free(name);
    if (st == RN_OK)
        st = transforms_set_attr_int(cast, "to", type);
    r->type = type;
    ++*added;
    return st;
}

rn_status transforms_add_preprocessing(graph *g, void *ctx, int *changes)
{
    const transforms_preprocess *pp = ctx;
    *changes = 0;
    if (pp == NULL || (pp->n_inputs <= 0 && pp->n_outputs <= 0))
        return RN_OK;
    if ((pp->n_inputs > 0 && pp->inputs == NULL) || (pp->n_outputs > 0 && pp->outputs == NULL))
        return rn_set_error(RN_INVALID_ARG,
                            "preprocessing: %d inputs and %d outputs declared "
                            "without their descriptions",
                            pp->n_inputs, pp->n_outputs);
    int n_in = pp->n_inputs > 0 ? pp->n_inputs : 0, n_out = pp->n_outputs > 0 ? pp->n_outputs : 0;
    input_plan *plans = calloc((size_t)n_in + 1, sizeof *plans);
    graph_value **results = calloc((size_t)n_out + 1, sizeof *results);
    rn_status st = plans != NULL && results != NULL
                       ? RN_OK
                       : rn_set_error(RN_OUT_OF_MEMORY, "preprocessing: out of memory");
    for (int i = 0; i < n_in && st == RN_OK; i++) {
        st = plan_input(g, &pp->inputs[i], &plans[i]);
        for (int j = 0; j < i && st == RN_OK; j++)
            if (plans[j].param == plans[i].param)
                st = rn_set_error(RN_INVALID_ARG, "preprocessing: input '%s' is declared twice",
                                  plans[i].param->name);
    }
    for (int i = 0; i < n_out && st == RN_OK; i++) {
        st = plan_output(g, &pp->outputs[i], &results[i]);
        for (int j = 0; j < i && st == RN_OK; j++)
            if (results[j] == results[i])
                st = rn_set_error(RN_INVALID_ARG, "postprocessing: output '%s' is declared twice",
                                  results[i]->name);
    }
    int added = 0;
    for (int i = 0; i < n_in && st == RN_OK; i++)
        if (input_has_work(&plans[i]))
            st = apply_input(g, &plans[i], &added);
    for (int i = 0; i < n_out && st == RN_OK; i++)
        st = apply_output(g, results[i], pp->outputs[i].type, &added);
    if (st == RN_OK && added > 0)
        st = graph_sort(g);
    if (st == RN_OK)
        *changes = added;
    free(plans);
    free(results);
    return st;
}
