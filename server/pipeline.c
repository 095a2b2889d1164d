/* Pipelines: steps of other models chained through completion callbacks
 * (see pipeline.h). */
#include "server/pipeline.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/registry.h"

/* One step: its model, and for each mapped port the pipeline tensor. */
typedef struct pl_step {
    char *model;
    char version[24]; /* "": the model's highest loaded version */
    size_t n_in, n_out;
    char **in_port, **out_port; /* the model's port names */
    size_t *in_tensor;          /* index in the pipeline's tensor table */
    size_t *out_tensor;
    size_t n_deps;      /* earlier steps whose outputs it takes */
    size_t *dependents; /* later steps that take its outputs */
    size_t n_dependents;
    size_t in_offset; /* where its inputs start in a run's input array */
} pl_step;

struct server_pipeline {
    struct server_registry *registry;
    char *name;
    pl_step *steps;
    size_t n_steps;
    char **tensors; /* every tensor name: the inputs first, then the steps' outputs */
    size_t n_tensors;
    rn_port *inputs, *outputs; /* names are tensors[] entries */
    size_t n_inputs, n_outputs;
    size_t *output_tensor; /* the tensor of each output */
};

/* A request in flight: the tensors made so far and one job per step. A
 * step starts when the last step it depends on has finished (from that
 * one's callback), so independent steps run side by side. */
typedef struct pl_run {
    server_pipeline *pl;
    server_model *model;        /* the pipeline's */
    server_job *job;            /* the client's */
    rn_tensor **tensors;        /* [0, n_inputs) borrowed from the job, the rest owned */
    server_input *inputs;       /* every step's, at its in_offset */
    server_job *subs;           /* one per step */
    server_model **step_models; /* acquired while the step's job runs */
    atomic_size_t *deps_left;   /* per step: steps it still waits for */
    atomic_size_t steps_left;   /* not finished (run, failed or skipped) */
    atomic_int failed;          /* the first failure writes the answer's error */
    int error_status;
    char *error;
} pl_run;

static void free_strings(char **list, size_t n)
{
    for (size_t i = 0; list && i < n; i++)
        free(list[i]);
    free(list);
}

void server_pipeline_free(server_pipeline *pl)
{
    if (pl == NULL)
        return;
    for (size_t s = 0; s < pl->n_steps; s++) {
        pl_step *st = &pl->steps[s];
        free(st->model);
        free_strings(st->in_port, st->n_in);
        free_strings(st->out_port, st->n_out);
        free(st->in_tensor);
        free(st->out_tensor);
        free(st->dependents);
    }
    free(pl->steps);
    free_strings(pl->tensors, pl->n_tensors);
    free(pl->inputs);
    free(pl->outputs);
    free(pl->output_tensor);
    free(pl->name);
    free(pl);
}

static long find_tensor(const server_pipeline *pl, const char *name)
{
    for (size_t i = 0; i < pl->n_tensors; i++)
        if (strcmp(pl->tensors[i], name) == 0)
            return (long)i;
    return -1;
}

static rn_status add_tensor(server_pipeline *pl, const char *name, const char *what)
{
    if (find_tensor(pl, name) >= 0)
        return rn_set_error(RN_INVALID_ARG, "%s: tensor '%s' is already defined", what, name);
    char **grown = realloc(pl->tensors, (pl->n_tensors + 1) * sizeof *grown);
    if (grown == NULL || (grown[pl->n_tensors] = strdup(name)) == NULL) {
        if (grown)
            pl->tensors = grown;
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for tensor '%s'", name);
    }
    pl->tensors = grown;
    pl->n_tensors++;
    return RN_OK;
}

/* The index of a port named `name` of the model (inputs or outputs), or -1. */
static long find_port(const server_model *m, int output, const char *name, rn_port *port)
{
    size_t n = output ? server_model_output_count(m) : server_model_input_count(m);
    for (size_t i = 0; i < n; i++)
        if ((output ? server_model_output(m, i, port) : server_model_input(m, i, port)) == RN_OK &&
            strcmp(port->name, name) == 0)
            return (long)i;
    return -1;
}

/* Reads a step's "inputs" or "outputs" map {model port: pipeline tensor}. */
static rn_status read_map(server_pipeline *pl, const json_t *map, const server_model *m,
                          pl_step *st, int output, const char *what)
{
    if (!json_is_object(map))
        return rn_set_error(RN_INVALID_ARG, "%s: '%s' must be an object of tensor names", what,
                            output ? "outputs" : "inputs");
    size_t n = json_object_size(map);
    char ***ports = output ? &st->out_port : &st->in_port;
    size_t **tensors = output ? &st->out_tensor : &st->in_tensor;
    if ((*ports = calloc(n ? n : 1, sizeof **ports)) == NULL ||
        (*tensors = calloc(n ? n : 1, sizeof **tensors)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %s", what);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)map, key, value)
    {
        rn_port port;
        const char *tensor = json_string_value(value);
        if (tensor == NULL)
            return rn_set_error(RN_INVALID_ARG, "%s: '%s' must map to a tensor name", what, key);
        if (find_port(m, output, key, &port) < 0)
            return rn_set_error(RN_INVALID_ARG, "%s: model '%s' has no %s '%s'", what,
                                server_model_name(m), output ? "output" : "input", key);
        size_t *n_mapped = output ? &st->n_out : &st->n_in;
        if (((*ports)[*n_mapped] = strdup(key)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %s", what);
        (*n_mapped)++;
        if (output) {
            rn_status s = add_tensor(pl, tensor, what);
            if (s != RN_OK)
                return s;
            (*tensors)[*n_mapped - 1] = pl->n_tensors - 1;
            continue;
        }
        long t = find_tensor(pl, tensor);
        if (t < 0)
            return rn_set_error(RN_INVALID_ARG,
                                "%s: input '%s' takes tensor '%s', which is neither a pipeline "
                                "input nor an output of an earlier step",
                                what, key, tensor);
        (*tensors)[*n_mapped - 1] = (size_t)t;
        if ((size_t)t < pl->n_inputs && pl->inputs[t].name == NULL) { /* first use types it */
            pl->inputs[t] = port;
            pl->inputs[t].name = pl->tensors[t];
        }
    }
    for (size_t i = 0; !output && i < server_model_input_count(m); i++) {
        rn_port port;
        server_model_input(m, i, &port);
        size_t j = 0;
        while (j < st->n_in && strcmp(st->in_port[j], port.name) != 0)
            j++;
        if (j == st->n_in)
            return rn_set_error(RN_INVALID_ARG, "%s: model '%s' input '%s' is not mapped", what,
                                server_model_name(m), port.name);
    }
    return RN_OK;
}

static rn_status read_step(server_pipeline *pl, size_t index, const json_t *step,
                           const char *const *outputs)
{
    pl_step *st = &pl->steps[index];
    char what[320];
    const json_t *model = json_object_get(step, "model");
    snprintf(what, sizeof what, "step %zu", index + 1);
    if (!json_is_object(step) || !json_is_string(model))
        return rn_set_error(RN_INVALID_ARG, "%s must be an object with a \"model\" name", what);
    snprintf(what, sizeof what, "step %zu (model '%s')", index + 1, json_string_value(model));
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)step, key, value)
    {
        if (strcmp(key, "model") && strcmp(key, "version") && strcmp(key, "inputs") &&
            strcmp(key, "outputs"))
            return rn_set_error(RN_INVALID_ARG,
                                "%s: unknown key '%s' (known: model, version, inputs, outputs)",
                                what, key);
    }
    const json_t *version = json_object_get(step, "version");
    if (version != NULL && (!json_is_integer(version) || json_integer_value(version) < 0))
        return rn_set_error(RN_INVALID_ARG, "%s: 'version' must be an integer >= 0", what);
    if (version != NULL)
        snprintf(st->version, sizeof st->version, "%lld", (long long)json_integer_value(version));
    if ((st->model = strdup(json_string_value(model))) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %s", what);
    server_model *m = server_registry_find(pl->registry, st->model, st->version);
    if (m == NULL)
        return rn_wrap_error(RN_INVALID_ARG, "%s: ", what);
    rn_status s = RN_OK;
    if (server_model_is_pipeline(m))
        s = rn_set_error(RN_INVALID_ARG, "%s: '%s' is a pipeline (steps are models)", what,
                         st->model);
    if (s == RN_OK)
        s = read_map(pl, json_object_get(step, "inputs"), m, st, 0, what);
    if (s == RN_OK)
        s = read_map(pl, json_object_get(step, "outputs"), m, st, 1, what);
    for (size_t o = 0; s == RN_OK && o < pl->n_outputs; o++) /* typed by the step making it */
        for (size_t k = 0; pl->output_tensor[o] == SIZE_MAX && k < st->n_out; k++)
            if (strcmp(pl->tensors[st->out_tensor[k]], outputs[o]) == 0 &&
                find_port(m, 1, st->out_port[k], &pl->outputs[o]) >= 0) {
                pl->output_tensor[o] = st->out_tensor[k];
                pl->outputs[o].name = pl->tensors[st->out_tensor[k]];
            }
    server_model_release(m);
    return s;
}

/* A non-empty array of distinct names, as new tensors. */
static rn_status read_names(server_pipeline *pl, const json_t *list, const char *key)
{
    if (!json_is_array(list) || json_array_size(list) == 0)
        return rn_set_error(RN_INVALID_ARG, "'%s' must be a non-empty array of tensor names", key);
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *name = json_string_value(json_array_get(list, i));
        if (name == NULL)
            return rn_set_error(RN_INVALID_ARG, "'%s'[%zu] must be a string", key, i);
        rn_status s = add_tensor(pl, name, key);
        if (s != RN_OK)
            return s;
    }
    return RN_OK;
}

/* Whether step `j` takes an output of step `i`. */
static int depends_on(const pl_step *j, const pl_step *i)
{
    for (size_t a = 0; a < j->n_in; a++)
        for (size_t b = 0; b < i->n_out; b++)
            if (j->in_tensor[a] == i->out_tensor[b])
                return 1;
    return 0;
}

/* The task DAG of the steps: each step's dependencies and dependents. */
static rn_status link_steps(server_pipeline *pl)
{
    size_t offset = 0;
    for (size_t j = 0; j < pl->n_steps; j++) {
        pl_step *sj = &pl->steps[j];
        sj->in_offset = offset;
        offset += sj->n_in;
        for (size_t i = 0; i < j; i++) {
            pl_step *si = &pl->steps[i];
            if (!depends_on(sj, si))
                continue;
            size_t *grown = realloc(si->dependents, (si->n_dependents + 1) * sizeof *grown);
            if (grown == NULL)
                return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the pipeline's steps");
            si->dependents = grown;
            si->dependents[si->n_dependents++] = j;
            sj->n_deps++;
        }
    }
    return RN_OK;
}

static rn_status read_pipeline(server_pipeline *pl, const json_t *root)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)root, key, value)
    {
        if (strcmp(key, "inputs") && strcmp(key, "outputs") && strcmp(key, "steps"))
            return rn_set_error(RN_INVALID_ARG, "unknown key '%s' (known: inputs, outputs, steps)",
                                key);
    }
    const json_t *outputs = json_object_get(root, "outputs"),
                 *steps = json_object_get(root, "steps");
    rn_status s = read_names(pl, json_object_get(root, "inputs"), "inputs");
    if (s != RN_OK)
        return s;
    pl->n_inputs = pl->n_tensors;
    if (!json_is_array(outputs) || json_array_size(outputs) == 0)
        return rn_set_error(RN_INVALID_ARG, "'outputs' must be a non-empty array of tensor names");
    if (!json_is_array(steps) || json_array_size(steps) == 0)
        return rn_set_error(RN_INVALID_ARG, "'steps' must be a non-empty array");
    pl->n_outputs = json_array_size(outputs);
    size_t n_steps = json_array_size(steps);
    if ((pl->inputs = calloc(pl->n_inputs, sizeof *pl->inputs)) == NULL ||
        (pl->outputs = calloc(pl->n_outputs, sizeof *pl->outputs)) == NULL ||
        (pl->output_tensor = calloc(pl->n_outputs, sizeof *pl->output_tensor)) == NULL ||
        (pl->steps = calloc(n_steps, sizeof *pl->steps)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the pipeline");
    for (size_t o = 0; o < pl->n_outputs; o++)
        pl->output_tensor[o] = SIZE_MAX;
    const char **names = calloc(pl->n_outputs, sizeof *names);
    if (names == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the pipeline");
    for (size_t o = 0; o < pl->n_outputs; o++)
        if ((names[o] = json_string_value(json_array_get(outputs, o))) == NULL)
            s = rn_set_error(RN_INVALID_ARG, "'outputs'[%zu] must be a string", o);
    for (size_t i = 0; s == RN_OK && i < n_steps; i++) {
        pl->n_steps = i + 1;
        s = read_step(pl, i, json_array_get(steps, i), names);
    }
    for (size_t o = 0; s == RN_OK && o < pl->n_outputs; o++)
        if (pl->output_tensor[o] == SIZE_MAX)
            s = rn_set_error(RN_INVALID_ARG, "output '%s' is made by no step", names[o]);
    free(names);
    if (s == RN_OK)
        s = link_steps(pl);
    if (s != RN_OK)
        return s;
    for (size_t i = 0; i < pl->n_inputs; i++)
        if (pl->inputs[i].name == NULL)
            return rn_set_error(RN_INVALID_ARG, "input '%s' is taken by no step", pl->tensors[i]);
    return RN_OK;
}

rn_status server_pipeline_create(struct server_registry *registry, const char *name,
                                 const char *json, server_pipeline **out)
{
    json_error_t error;
    json_t *root = json_loads(json ? json : "", 0, &error);
    if (!json_is_object(root)) {
        json_decref(root);
        return rn_set_error(RN_INVALID_ARG, "'pipeline' must be an object");
    }
    server_pipeline *pl = calloc(1, sizeof *pl);
    rn_status s = pl && (pl->name = strdup(name))
                      ? RN_OK
                      : rn_set_error(RN_OUT_OF_MEMORY, "no memory for pipeline '%s'", name);
    if (s == RN_OK) {
        pl->registry = registry;
        s = read_pipeline(pl, root);
    }
    json_decref(root);
    if (s != RN_OK) {
        server_pipeline_free(pl);
        return s;
    }
    *out = pl;
    return RN_OK;
}

size_t server_pipeline_input_count(const server_pipeline *pl)
{
    return pl->n_inputs;
}
size_t server_pipeline_output_count(const server_pipeline *pl)
{
    return pl->n_outputs;
}
rn_status server_pipeline_input(const server_pipeline *pl, size_t i, rn_port *out)
{
    if (i >= pl->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "pipeline '%s' has %zu inputs", pl->name, pl->n_inputs);
    *out = pl->inputs[i];
    return RN_OK;
}
rn_status server_pipeline_output(const server_pipeline *pl, size_t i, rn_port *out)
{
    if (i >= pl->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "pipeline '%s' has %zu outputs", pl->name,
                            pl->n_outputs);
    *out = pl->outputs[i];
    return RN_OK;
}

/* ---- running ---- */

static void free_run(pl_run *r)
{
    for (size_t i = r->pl->n_inputs; r->tensors != NULL && i < r->pl->n_tensors; i++)
        rn_tensor_free(r->tensors[i]);
    free(r->tensors);
    free(r->inputs);
    free(r->subs);
    free(r->step_models);
    free(r->deps_left);
    free(r->error);
    free(r);
}

/* Keeps the first failure: its status, and a message naming step `j`. */
static void record_failure(pl_run *r, size_t j, int http_status, const char *message)
{
    if (atomic_exchange(&r->failed, 1) != 0)
        return;
    const pl_step *st = &r->pl->steps[j];
    size_t len = strlen(message) + strlen(st->model) + strlen(r->pl->name) + 64;
    r->error_status = http_status;
    if ((r->error = malloc(len)) != NULL)
        snprintf(r->error, len, "pipeline '%s' step %zu (model '%s'): %s", r->pl->name, j + 1,
                 st->model, message);
}

/* Answers the client's job: the outputs it asked for (all when it named
 * none), or the recorded failure. Every step has finished. */
static void complete(pl_run *r)
{
    server_pipeline *pl = r->pl;
    server_job *job = r->job;
    size_t n = job->infer.n_outputs ? job->infer.n_outputs : pl->n_outputs;
    server_output *outs = NULL;
    rn_status s = RN_OK;
    if (!atomic_load(&r->failed)) {
        outs = calloc(n, sizeof *outs);
        s = outs ? RN_OK : rn_set_error(RN_OUT_OF_MEMORY, "no memory for outputs");
    }
    for (size_t o = 0; outs != NULL && o < pl->n_outputs; o++) {
        const char *name = pl->tensors[pl->output_tensor[o]];
        const rn_tensor *t = r->tensors[pl->output_tensor[o]];
        if (job->infer.n_outputs == 0)
            outs[o] = (server_output){name, t, job->infer.binary_output};
        for (size_t j = 0; j < job->infer.n_outputs; j++)
            if (strcmp(job->infer.outputs[j].name, name) == 0)
                outs[j] = (server_output){name, t, job->infer.outputs[j].binary};
    }
    if (outs != NULL && s == RN_OK)
        s = server_job_encode(job, server_model_name(r->model), server_model_version_text(r->model),
                              outs, n);
    free(outs);
    if (atomic_load(&r->failed)) {
        job->http_status = r->error_status;
        job->error = r->error;
        r->error = NULL;
    } else if (s != RN_OK) {
        job->http_status = 500;
        job->error = strdup(rn_last_error());
    } else {
        job->http_status = 200;
    }
    server_model *m = r->model;
    free_run(r);
    server_model_finish(m, job);
}

static void launch(pl_run *r, size_t j);

/* Step j has finished (run, failed or skipped): starts the steps that
 * waited only for it, and answers the request after the last step. */
static void step_finished(pl_run *r, size_t j)
{
    const pl_step *st = &r->pl->steps[j];
    for (size_t d = 0; d < st->n_dependents; d++)
        if (atomic_fetch_sub(&r->deps_left[st->dependents[d]], 1) == 1)
            launch(r, st->dependents[d]);
    if (atomic_fetch_sub(&r->steps_left, 1) == 1)
        complete(r);
}

/* A step's job is done (on a runnel callback thread, or in its submit). */
static void step_done(server_job *sub)
{
    pl_run *r = sub->user;
    size_t j = (size_t)(sub - r->subs);
    const pl_step *st = &r->pl->steps[j];
    server_model *m = r->step_models[j];
    r->step_models[j] = NULL;
    if (sub->http_status != 200) {
        record_failure(r, j, sub->http_status, sub->error ? sub->error : "out of memory");
        free(sub->error);
        sub->error = NULL;
    }
    for (size_t k = 0; k < sub->n_outputs; k++) {
        rn_port port;
        if (server_model_output(m, k, &port) != RN_OK)
            continue;
        for (size_t i = 0; i < st->n_out; i++)
            if (strcmp(st->out_port[i], port.name) == 0) {
                r->tensors[st->out_tensor[i]] = sub->outputs[k];
                sub->outputs[k] = NULL;
            }
    }
    server_job_clear_outputs(sub);
    server_model_release(m);
    step_finished(r, j);
}

/* Submits step j's job (its inputs are all there); once the pipeline has
 * failed, skips it. From the submit on, its callback carries the step. */
static void launch(pl_run *r, size_t j)
{
    const pl_step *st = &r->pl->steps[j];
    if (atomic_load(&r->failed)) {
        step_finished(r, j);
        return;
    }
    server_model *m = server_registry_find(r->pl->registry, st->model, st->version);
    if (m == NULL) {
        record_failure(r, j, 503, rn_last_error());
        step_finished(r, j);
        return;
    }
    server_job *sub = &r->subs[j];
    server_input *inputs = &r->inputs[st->in_offset];
    for (size_t i = 0; i < st->n_in; i++)
        inputs[i] = (server_input){st->in_port[i], r->tensors[st->in_tensor[i]]};
    sub->infer.inputs = inputs;
    sub->infer.n_inputs = st->n_in;
    sub->infer.timeout_us = r->job->infer.timeout_us;
    sub->keep_outputs = 1;
    sub->done = step_done;
    sub->user = r;
    sub->received_ns = server_now_ns();
    r->step_models[j] = m;
    rn_status s = server_model_bind(m, &sub->infer);
    if (s == RN_OK && (s = server_model_submit(m, sub)) == RN_OK)
        return; /* r may be gone already */
    server_model_count_failure(m, sub->received_ns);
    record_failure(r, j, s == RN_RESULT_NOT_READY ? 503 : 400, rn_last_error());
    r->step_models[j] = NULL;
    server_model_release(m);
    step_finished(r, j);
}

void server_pipeline_run(server_pipeline *pl, server_model *model, server_job *job)
{
    size_t n_steps = pl->n_steps, n_in = 0;
    for (size_t j = 0; j < n_steps; j++)
        n_in += pl->steps[j].n_in;
    pl_run *r = calloc(1, sizeof *r);
    if (r == NULL || (r->tensors = calloc(pl->n_tensors, sizeof *r->tensors)) == NULL ||
        (r->inputs = calloc(n_in ? n_in : 1, sizeof *r->inputs)) == NULL ||
        (r->subs = calloc(n_steps, sizeof *r->subs)) == NULL ||
        (r->step_models = calloc(n_steps, sizeof *r->step_models)) == NULL ||
        (r->deps_left = calloc(n_steps, sizeof *r->deps_left)) == NULL) {
        if (r) {
            r->pl = pl;
            free_run(r);
        }
        job->http_status = 500;
        job->error = strdup("no memory to run the pipeline");
        server_model_finish(model, job);
        return;
    }
    r->pl = pl;
    r->model = model;
    r->job = job;
    for (size_t i = 0; i < pl->n_inputs; i++) /* bound: in the pipeline's order */
        r->tensors[i] = job->infer.inputs[i].tensor;
    for (size_t j = 0; j < n_steps; j++)
        atomic_init(&r->deps_left[j], pl->steps[j].n_deps);
    /* Held until every first step is launched, so that none can finish the run first. */
    atomic_init(&r->steps_left, n_steps + 1);
    for (size_t j = 0; j < n_steps; j++)
        if (pl->steps[j].n_deps == 0)
            launch(r, j);
    if (atomic_fetch_sub(&r->steps_left, 1) == 1)
        complete(r);
}
