/* A served model version: infer request pool, bounded queue, counters (see
 * model.h).
 *
 * Each infer request of the pool is a slot. A job takes a free slot or
 * waits in the queue; the slot's completion callback (on runnel's callback
 * executor) encodes the response, calls the job's done and starts the next
 * queued job on the same request, so no server thread ever waits on
 * inference.
 *
 * With max_batch_size > 0 the model's inputs get a dynamic dim 0 at load,
 * and a slot that frees takes the queued jobs at the head that fit together
 * (same dims past 0, batch sizes adding up to at most max_batch_size): their
 * inputs are joined along dim 0 into one run and its outputs split back.
 * With max_queue_delay_us 0 a batch forms only from jobs already waiting,
 * so an idle model answers each request alone. With a delay, a job waits
 * (even while a slot is free) until the queue holds a full batch or one of
 * a preferred size, or until the first job has waited the delay: a timer
 * thread of the model wakes then and starts the batch. As in Triton, the
 * batch taken is the largest preferred size the queue can form, else all
 * that fits.
 *
 * A pipeline (pipeline.c) is a model without a compiled model or slots:
 * its jobs run as a chain of its steps' jobs. */
#include "server/model.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/batch.h"
#include "server/pipeline.h"
#include "server/sequence.h"

typedef struct server_slot {
    server_model *model;
    rn_infer_request *request;
    server_job *jobs;   /* the jobs in flight (linked by next), NULL when free */
    rn_tensor **joined; /* a batch's joined inputs (owned), one per input */
    uint64_t started_ns;
    struct server_slot *next_free;
} server_slot;

struct server_model {
    char *name;
    int64_t version;
    char version_text[24];
    rn_compiled_model *compiled;
    server_slot *slots;
    size_t n_slots;
    size_t max_queue_size;
    size_t max_batch_size; /* 0: each job runs alone */
    uint64_t max_queue_delay_us;
    size_t *preferred; /* ascending */
    size_t n_preferred;
    uint64_t default_timeout_us;
    uint64_t config_hash;
    server_pipeline *pipeline;   /* a pipeline: no compiled model, no slots */
    server_sequences *sequences; /* a stateful model's (NULL: none) */
    size_t n_inputs;
    atomic_long refs;
    server_stats stats;

    pthread_mutex_t lock; /* guards the free list and the queue */
    server_slot *free_slots;
    server_job *queue_head, *queue_tail;
    size_t queued;

    /* The batch timer (max_queue_delay_us > 0): waits for the first queued
     * job's delay to pass while a slot is free. */
    pthread_t timer;
    int has_timer, stopping;
    pthread_cond_t timer_cond; /* with lock: the queue or the free list changed */
};

uint64_t server_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_complete(rn_infer_request *request, rn_status status, void *user_data);
static rn_status enqueue(server_model *m, server_job *job, int bounded);

/* Runs each batch size a batch will likely have (the preferred sizes and
 * max_batch_size) once on zeros, synchronously on slot `s` before it
 * serves. The dynamic-batch compile specialises its plan for each concrete
 * shape on the first run of that shape, in the thread that starts the run,
 * and caches it (docs/architecture.md, "Specs"): warming makes these the
 * batch-N compiled variants, built at load instead of on the first batch of
 * each size in a serving thread. Inputs with other dynamic dims or strings
 * cannot be made up: then nothing is warmed. A failed run is reported on
 * stderr and warming stops; the model still serves. */
static void warm_batch_sizes(server_model *m, server_slot *s)
{
    size_t sizes[8], n = 0;
    for (size_t i = 0; i < m->n_preferred && n < 7; i++)
        sizes[n++] = m->preferred[i];
    if (n == 0 || sizes[n - 1] != m->max_batch_size)
        sizes[n++] = m->max_batch_size;
    for (size_t i = 0; i < m->n_inputs; i++) {
        rn_port port;
        if (rn_compiled_model_input(m->compiled, i, &port) != RN_OK || port.shape.rank < 1 ||
            port.element_type == RN_STRING)
            return;
        for (int d = 1; d < port.shape.rank; d++)
            if (port.shape.dims[d] == RN_DIM_DYNAMIC)
                return;
    }
    for (size_t k = 0; k < n; k++) {
        rn_status st = RN_OK;
        for (size_t i = 0; i < m->n_inputs && st == RN_OK; i++) {
            rn_port port;
            rn_compiled_model_input(m->compiled, i, &port);
            int64_t dims[RN_MAX_RANK];
            memcpy(dims, port.shape.dims, (size_t)port.shape.rank * sizeof *dims);
            dims[0] = (int64_t)sizes[k];
            rn_tensor_free(s->joined[i]); /* the slot owns what its request reads */
            s->joined[i] = NULL;
            st = rn_tensor_create(port.element_type, dims, (size_t)port.shape.rank, &s->joined[i]);
            if (st == RN_OK)
                st = rn_infer_request_set_input_tensor(s->request, i, s->joined[i]);
        }
        if (st == RN_OK)
            st = rn_infer_request_infer(s->request);
        if (st != RN_OK) {
            fprintf(stderr, "runnel-server: model '%s' version %s: warming batch size %zu: %s\n",
                    m->name, m->version_text, sizes[k], rn_last_error());
            return;
        }
    }
}

static rn_status create_slots(server_model *m)
{
    char buf[32];
    size_t n = 1;
    if (rn_compiled_model_get_property(m->compiled, "OPTIMAL_NUMBER_OF_INFER_REQUESTS", buf,
                                       sizeof buf) == RN_OK &&
        atoi(buf) > 0)
        n = (size_t)atoi(buf);
    if ((m->slots = calloc(n, sizeof *m->slots)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu infer requests", n);
    for (size_t i = 0; i < n; i++) {
        server_slot *s = &m->slots[i];
        s->model = m;
        if ((s->joined = calloc(m->n_inputs ? m->n_inputs : 1, sizeof *s->joined)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu inputs", m->n_inputs);
        rn_status st = rn_compiled_model_create_infer_request(m->compiled, &s->request);
        if (st == RN_OK && i == 0 && m->max_batch_size > 0)
            warm_batch_sizes(m, s); /* before the callback: these runs answer no job */
        if (st == RN_OK)
            st = rn_infer_request_set_callback(s->request, on_complete, s);
        if (st != RN_OK)
            return st;
        m->n_slots = i + 1;
        s->next_free = m->free_slots;
        m->free_slots = s;
    }
    return RN_OK;
}

/* Gives every input a dynamic dim 0 (the batch), which must be 1 or
 * dynamic already. */
static rn_status make_batch_dynamic(rn_model *model)
{
    for (size_t i = 0; i < rn_model_input_count(model); i++) {
        rn_port port;
        rn_status st = rn_model_input(model, i, &port);
        if (st != RN_OK)
            return st;
        if (port.shape.rank < 1 ||
            (port.shape.dims[0] != 1 && port.shape.dims[0] != RN_DIM_DYNAMIC)) {
            char shape[128];
            server_shape_text(port.shape.dims, port.shape.rank > 0 ? (size_t)port.shape.rank : 0,
                              shape, sizeof shape);
            return rn_set_error(RN_INVALID_ARG,
                                "max_batch_size needs a batch dim (1 or dynamic) first in every "
                                "input; input '%s' has shape %s",
                                port.name, shape);
        }
        rn_partial_shape shape = port.shape;
        shape.dims[0] = RN_DIM_DYNAMIC;
        if ((st = rn_model_reshape(model, port.name, &shape)) != RN_OK)
            return rn_wrap_error(st, "making dim 0 of input '%s' the batch: ", port.name);
    }
    return RN_OK;
}

static void *timer_main(void *arg);

/* What a model and a pipeline share: name, version, config, lock. */
static server_model *new_model(const char *name, int64_t version)
{
    server_model *m = calloc(1, sizeof *m);
    if (m == NULL || (m->name = strdup(name)) == NULL) {
        free(m);
        rn_set_error(RN_OUT_OF_MEMORY, "model '%s': no memory", name);
        return NULL;
    }
    m->version = version;
    snprintf(m->version_text, sizeof m->version_text, "%" PRId64, version);
    pthread_mutex_init(&m->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&m->timer_cond, &attr);
    pthread_condattr_destroy(&attr);
    return m;
}

static rn_status init_model(server_model *m, const server_model_config *config)
{
    m->max_queue_size = config->max_queue_size;
    m->max_batch_size = config->max_batch_size;
    m->max_queue_delay_us = config->max_queue_delay_us;
    m->default_timeout_us = config->default_timeout_us;
    m->config_hash = config->hash;
    if (config->n_preferred > 0) {
        if ((m->preferred = malloc(config->n_preferred * sizeof *m->preferred)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the preferred batch sizes");
        memcpy(m->preferred, config->preferred_batch_sizes,
               config->n_preferred * sizeof *m->preferred);
        m->n_preferred = config->n_preferred;
    }
    return RN_OK;
}

rn_status server_model_load_pipeline(struct server_registry *registry, const char *name,
                                     const server_model_config *config, server_model **out)
{
    server_model *m = new_model(name, 1);
    if (m == NULL)
        return RN_OUT_OF_MEMORY;
    rn_status st = init_model(m, config);
    if (st == RN_OK)
        st = server_pipeline_create(registry, name, config->pipeline, &m->pipeline);
    if (st != RN_OK) {
        server_model_free(m);
        return rn_wrap_error(st, "pipeline '%s': ", name);
    }
    *out = m;
    return RN_OK;
}

rn_status server_model_load(rn_core *core, const char *root, const char *name, int64_t version,
                            const server_model_config *config, const char *device,
                            server_model **out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%" PRId64 "/model.onnx", root, name, version);
    server_model *m = new_model(name, version);
    if (m == NULL)
        return RN_OUT_OF_MEMORY;
    const char *dev = config->device ? config->device : device;
    rn_model *model = NULL;
    rn_status st = init_model(m, config);
    if (st == RN_OK)
        st = rn_core_read_model(core, path, &model);
    if (st == RN_OK && m->max_batch_size > 0)
        st = make_batch_dynamic(model);
    if (st == RN_OK)
        st = rn_core_compile_model(core, model, dev, config->properties, config->n_properties,
                                   &m->compiled);
    rn_model_free(model);
    if (st == RN_OK && config->n_states > 0)
        st = server_sequences_create(m->compiled, config, m->max_batch_size > 0, &m->sequences);
    if (st == RN_OK) {
        m->n_inputs = rn_compiled_model_input_count(m->compiled);
        st = create_slots(m);
    }
    if (st == RN_OK && m->max_queue_delay_us > 0) {
        if (pthread_create(&m->timer, NULL, timer_main, m) != 0)
            st = rn_set_error(RN_OUT_OF_MEMORY, "cannot start the batch timer thread");
        m->has_timer = st == RN_OK;
    }
    if (st != RN_OK) {
        server_model_free(m);
        return rn_wrap_error(st, "model '%s' version %" PRId64 " on %s: ", name, version, dev);
    }
    *out = m;
    return RN_OK;
}

void server_model_free(server_model *m)
{
    if (m == NULL)
        return;
    if (m->has_timer) {
        pthread_mutex_lock(&m->lock);
        m->stopping = 1;
        pthread_cond_signal(&m->timer_cond);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->timer, NULL);
    }
    for (size_t i = 0; i < m->n_slots; i++) {
        rn_infer_request_wait(m->slots[i].request); /* its callback has returned */
        rn_infer_request_free(m->slots[i].request);
        for (size_t j = 0; m->slots[i].joined && j < m->n_inputs; j++)
            rn_tensor_free(m->slots[i].joined[j]);
        free(m->slots[i].joined);
    }
    free(m->slots);
    rn_compiled_model_free(m->compiled);
    server_pipeline_free(m->pipeline);
    server_sequences_free(m->sequences);
    free(m->preferred);
    pthread_cond_destroy(&m->timer_cond);
    pthread_mutex_destroy(&m->lock);
    free(m->name);
    free(m);
}

const char *server_model_name(const server_model *m)
{
    return m->name;
}
int64_t server_model_version(const server_model *m)
{
    return m->version;
}
const char *server_model_version_text(const server_model *m)
{
    return m->version_text;
}
const rn_compiled_model *server_model_compiled(const server_model *m)
{
    return m->compiled;
}
int server_model_is_pipeline(const server_model *m)
{
    return m->pipeline != NULL;
}
uint64_t server_model_config_hash(const server_model *m)
{
    return m->config_hash;
}
size_t server_model_input_count(const server_model *m)
{
    return m->pipeline ? server_pipeline_input_count(m->pipeline)
                       : rn_compiled_model_input_count(m->compiled);
}
size_t server_model_output_count(const server_model *m)
{
    return m->pipeline ? server_pipeline_output_count(m->pipeline)
                       : rn_compiled_model_output_count(m->compiled);
}
rn_status server_model_input(const server_model *m, size_t i, rn_port *out)
{
    return m->pipeline ? server_pipeline_input(m->pipeline, i, out)
                       : rn_compiled_model_input(m->compiled, i, out);
}
rn_status server_model_output(const server_model *m, size_t i, rn_port *out)
{
    return m->pipeline ? server_pipeline_output(m->pipeline, i, out)
                       : rn_compiled_model_output(m->compiled, i, out);
}
server_stats *server_model_stats(server_model *m)
{
    return &m->stats;
}
size_t server_model_max_batch_size(const server_model *m)
{
    return m->max_batch_size;
}
uint64_t server_model_queue_delay_us(const server_model *m)
{
    return m->max_queue_delay_us;
}
const size_t *server_model_preferred(const server_model *m, size_t *n)
{
    *n = m->n_preferred;
    return m->preferred;
}

void server_model_statistics(server_model *m, server_statistics *out)
{
    server_stats *s = &m->stats;
    uint64_t request_us = atomic_load(&s->request_us), success_us = atomic_load(&s->success_us);
    *out = (server_statistics){
        .last_ms = atomic_load(&s->last_ms),
        .inference_count = atomic_load(&s->inference_count),
        .execution_count = atomic_load(&s->exec_count),
        .success_count = atomic_load(&s->success),
        .success_ns = success_us * 1000,
        .fail_count = atomic_load(&s->failure),
        .fail_ns = (request_us > success_us ? request_us - success_us : 0) * 1000,
        .ran = atomic_load(&s->ran),
        .queue_ns = atomic_load(&s->queue_us) * 1000,
        .input_ns = atomic_load(&s->input_us) * 1000,
        .infer_ns = atomic_load(&s->infer_us) * 1000,
        .output_ns = atomic_load(&s->output_us) * 1000,
    };
}

size_t server_model_sequences(server_model *m)
{
    return m->sequences ? server_sequences_active(m->sequences) : 0;
}

size_t server_model_requests(const server_model *m)
{
    return m->n_slots;
}
void server_model_acquire(server_model *m)
{
    atomic_fetch_add(&m->refs, 1);
}
void server_model_release(server_model *m)
{
    atomic_fetch_sub(&m->refs, 1);
}
long server_model_refs(server_model *m)
{
    return atomic_load(&m->refs);
}

static rn_status check_input(const rn_port *port, const rn_tensor *t)
{
    if (rn_tensor_element_type(t) != port->element_type) {
        const char *want = server_datatype_name(port->element_type);
        return rn_set_error(RN_INVALID_ARG, "input '%s': datatype %s, the model takes %s",
                            port->name, server_datatype_name(rn_tensor_element_type(t)),
                            want ? want : rn_element_type_name(port->element_type));
    }
    if (port->shape.rank < 0)
        return RN_OK;
    int rank = (int)rn_tensor_rank(t);
    int fits = rank == port->shape.rank;
    for (int d = 0; fits && d < rank; d++)
        fits = port->shape.dims[d] == RN_DIM_DYNAMIC || port->shape.dims[d] == rn_tensor_dims(t)[d];
    if (fits)
        return RN_OK;
    char got[128], want[128];
    server_shape_text(rn_tensor_dims(t), (size_t)rank, got, sizeof got);
    server_shape_text(port->shape.dims, (size_t)port->shape.rank, want, sizeof want);
    return rn_set_error(RN_INVALID_ARG, "input '%s': shape %s, the model takes %s (-1: any)",
                        port->name, got, want);
}

rn_status server_model_bind(const server_model *m, server_infer *infer)
{
    if (m->sequences != NULL) {
        rn_status st = server_sequences_bind(m->sequences, m->compiled, m->name, infer);
        if (st != RN_OK)
            return st;
    } else if (infer->sequence_id != 0 || infer->sequence_start || infer->sequence_end) {
        return rn_set_error(RN_INVALID_ARG,
                            "model '%s' is not stateful (no 'sequence' in its config.json) but "
                            "the request has sequence parameters",
                            m->name);
    }
    size_t n = server_model_input_count(m);
    for (size_t j = 0; j < infer->n_inputs; j++) {
        size_t i = 0;
        rn_port port;
        for (; i < n; i++)
            if (server_model_input(m, i, &port) == RN_OK &&
                strcmp(port.name, infer->inputs[j].name) == 0)
                break;
        if (i == n)
            return rn_set_error(RN_INVALID_ARG, "model '%s' has no input '%s'", m->name,
                                infer->inputs[j].name);
        rn_status st = check_input(&port, infer->inputs[j].tensor);
        if (st != RN_OK)
            return st;
        if (i != j && i < infer->n_inputs) { /* put it in the model's order */
            server_input tmp = infer->inputs[i];
            infer->inputs[i] = infer->inputs[j];
            infer->inputs[j] = tmp;
            j--;
        }
    }
    for (size_t i = 0; i < n && infer->n_inputs != n; i++) {
        rn_port port;
        server_model_input(m, i, &port);
        if (i >= infer->n_inputs || strcmp(infer->inputs[i].name, port.name) != 0)
            return rn_set_error(RN_INVALID_ARG,
                                "model '%s' takes %zu inputs; input '%s' is missing", m->name, n,
                                port.name);
    }
    for (size_t i = 0; m->max_batch_size > 0 && i < n; i++) { /* ranks >= 1: checked above */
        int64_t batch = rn_tensor_dims(infer->inputs[i].tensor)[0];
        int64_t first = rn_tensor_dims(infer->inputs[0].tensor)[0];
        if (batch != first)
            return rn_set_error(RN_INVALID_ARG,
                                "inputs disagree on the batch size (dim 0): '%s' has %lld, '%s' "
                                "%lld",
                                infer->inputs[0].name, (long long)first, infer->inputs[i].name,
                                (long long)batch);
        if (batch < 1 || (size_t)batch > m->max_batch_size)
            return rn_set_error(RN_INVALID_ARG,
                                "input '%s': batch size %lld is not in 1..%zu (max_batch_size)",
                                infer->inputs[i].name, (long long)batch, m->max_batch_size);
    }
    size_t n_out = server_model_output_count(m);
    for (size_t j = 0; j < infer->n_outputs; j++) {
        size_t i = 0;
        rn_port port;
        for (; i < n_out; i++)
            if (server_model_output(m, i, &port) == RN_OK &&
                strcmp(port.name, infer->outputs[j].name) == 0)
                break;
        if (i == n_out)
            return rn_set_error(RN_INVALID_ARG, "model '%s' has no output '%s'", m->name,
                                infer->outputs[j].name);
    }
    return RN_OK;
}

static void fail_job(server_job *job, int http_status, const char *what)
{
    job->http_status = http_status;
    size_t len = strlen(what) + strlen(rn_last_error()) + 3;
    job->error = malloc(len);
    if (job->error != NULL)
        snprintf(job->error, len, "%s%s%s", what, *what ? ": " : "", rn_last_error());
}

/* The batch size of a job (dim 0 of its first input); 1 without batching. */
static int64_t job_batch(const server_model *m, const server_job *job)
{
    return m->max_batch_size > 0 ? rn_tensor_dims(job->infer.inputs[0].tensor)[0] : 1;
}

void server_job_clear_outputs(server_job *job)
{
    for (size_t i = 0; i < job->n_outputs; i++)
        rn_tensor_free(job->outputs[i]);
    free(job->outputs);
    job->outputs = NULL;
    job->n_outputs = 0;
}

/* A pipeline step's job: a copy of every output (its rows of each when it
 * ran in a batch), since the request's tensors are reused by its next run. */
static void keep_outputs(server_model *m, rn_infer_request *request, server_job *job, int sliced,
                         int64_t row)
{
    size_t n = rn_compiled_model_output_count(m->compiled);
    rn_status st = (job->outputs = calloc(n ? n : 1, sizeof *job->outputs)) != NULL
                       ? RN_OK
                       : rn_set_error(RN_OUT_OF_MEMORY, "no memory for outputs");
    for (size_t i = 0; i < n && st == RN_OK; i++, job->n_outputs++) {
        rn_tensor *t, *slice = NULL;
        if ((st = rn_infer_request_get_output_tensor(request, i, &t)) != RN_OK)
            break;
        if (sliced && (st = server_batch_slice(t, row, job_batch(m, job), &slice)) != RN_OK)
            break;
        const rn_tensor *from = slice ? slice : t;
        st = server_batch_concat((rn_tensor *const *)&from, 1, &job->outputs[i]);
        rn_tensor_free(slice);
    }
    if (st != RN_OK) {
        server_job_clear_outputs(job);
        fail_job(job, 500, "copying the outputs");
    } else {
        job->http_status = 200;
    }
}

/* Encodes the outputs the job asked for (every output when it named none):
 * rows [row, row + batch) of each when it ran in a batch of several jobs. */
static void encode_outputs(server_model *m, rn_infer_request *request, server_job *job, int sliced,
                           int64_t row)
{
    size_t n_model = rn_compiled_model_output_count(m->compiled);
    size_t n = job->infer.n_outputs ? job->infer.n_outputs : n_model;
    server_output *outs = calloc(n ? n : 1, sizeof *outs);
    rn_tensor **slices = calloc(n_model ? n_model : 1, sizeof *slices);
    rn_status st = outs && slices ? RN_OK : rn_set_error(RN_OUT_OF_MEMORY, "no memory for outputs");
    for (size_t i = 0; i < n_model && st == RN_OK; i++) {
        rn_port port;
        rn_tensor *t;
        if ((st = rn_compiled_model_output(m->compiled, i, &port)) != RN_OK ||
            (st = rn_infer_request_get_output_tensor(request, i, &t)) != RN_OK)
            break;
        if (sliced) {
            if ((st = server_batch_slice(t, row, job_batch(m, job), &slices[i])) != RN_OK) {
                rn_wrap_error(st, "output '%s': ", port.name);
                break;
            }
            t = slices[i];
        }
        if (job->infer.n_outputs == 0) {
            outs[i] = (server_output){port.name, t, job->infer.binary_output};
            continue;
        }
        for (size_t j = 0; j < n; j++)
            if (strcmp(job->infer.outputs[j].name, port.name) == 0)
                outs[j] = (server_output){port.name, t, job->infer.outputs[j].binary};
    }
    if (st == RN_OK)
        st = server_job_encode(job, m->name, m->version_text, outs, n);
    for (size_t i = 0; slices && i < n_model; i++)
        rn_tensor_free(slices[i]);
    free(slices);
    free(outs);
    if (st != RN_OK)
        fail_job(job, 500, "encoding the response");
    else
        job->http_status = 200;
}

rn_status server_job_encode(server_job *job, const char *model, const char *version,
                            const server_output *outputs, size_t n_outputs)
{
    if (job->encode != NULL)
        return job->encode(job, model, version, outputs, n_outputs, &job->response);
    return server_response_encode(model, version, job->infer.id, outputs, n_outputs,
                                  &job->response);
}

/* Milliseconds since the epoch (the statistics' last_inference). */
static uint64_t epoch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void server_model_finish(server_model *m, server_job *job)
{
    uint64_t now = server_now_ns();
    server_stats *s = &m->stats;
    uint64_t took_us = (now - job->received_ns) / 1000;
    if (job->http_status == 200) {
        atomic_fetch_add(&s->success, 1);
        atomic_fetch_add(&s->inference_count, (uint64_t)job_batch(m, job));
        atomic_fetch_add(&s->success_us, took_us);
    } else {
        atomic_fetch_add(&s->failure, 1);
    }
    atomic_fetch_add(&s->request_us, took_us);
    atomic_store(&s->last_ms, epoch_ms());
    atomic_fetch_sub(&s->pending, 1);
    server_job *next = job->in_sequence ? server_sequences_release(m->sequences, job) : NULL;
    job->done(job);   /* the job may be gone after this */
    if (next != NULL) /* the next request of its sequence */
        enqueue(m, next, 0);
}

/* Answers every job of a list with the current error. */
static void fail_jobs(server_model *m, server_job *jobs, int http_status, const char *what)
{
    while (jobs != NULL) {
        server_job *next = jobs->next;
        fail_job(jobs, http_status, what);
        server_model_finish(m, jobs);
        jobs = next;
    }
}

/* The slot's joined inputs for a batch of several jobs. */
static rn_status join_inputs(server_slot *s, server_job *jobs, size_t n_jobs)
{
    server_model *m = s->model;
    rn_tensor **parts = calloc(n_jobs, sizeof *parts);
    if (parts == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory to join %zu requests", n_jobs);
    rn_status st = RN_OK;
    for (size_t i = 0; i < m->n_inputs && st == RN_OK; i++) {
        size_t k = 0;
        for (server_job *j = jobs; j != NULL; j = j->next)
            parts[k++] = j->infer.inputs[i].tensor;
        rn_tensor_free(s->joined[i]);
        s->joined[i] = NULL;
        st = server_batch_concat(parts, n_jobs, &s->joined[i]);
        if (st == RN_OK)
            st = rn_infer_request_set_input_tensor(s->request, i, s->joined[i]);
    }
    free(parts);
    return st;
}

/* Binds the jobs' inputs to the slot's request (joined when several) and
 * starts it. On failure the jobs are answered and the slot stays the
 * caller's. */
static int start(server_slot *s, server_job *jobs)
{
    server_model *m = s->model;
    uint64_t t0 = server_now_ns();
    size_t n_jobs = 0;
    for (server_job *j = jobs; j != NULL; j = j->next) {
        atomic_fetch_add(&m->stats.queue_us, (t0 - j->queued_ns) / 1000);
        n_jobs++;
    }
    rn_status st = RN_OK;
    if (n_jobs > 1)
        st = join_inputs(s, jobs, n_jobs);
    for (size_t i = 0; n_jobs == 1 && i < m->n_inputs && st == RN_OK; i++)
        st = rn_infer_request_set_input_tensor(s->request, i, jobs->infer.inputs[i].tensor);
    uint64_t t1 = server_now_ns();
    atomic_fetch_add(&m->stats.input_us, (t1 - t0) / 1000 * n_jobs);
    atomic_fetch_add(&m->stats.ran, n_jobs);
    s->jobs = jobs;
    s->started_ns = t1;
    if (st == RN_OK && (st = rn_infer_request_start_async(s->request)) == RN_OK)
        return 1;
    s->jobs = NULL;
    int bad_input = st == RN_INVALID_ARG || st == RN_SHAPE_MISMATCH || st == RN_TYPE_MISMATCH;
    fail_jobs(m, jobs, bad_input && n_jobs == 1 ? 400 : 500, "starting inference");
    return 0;
}

/* Whether a queued job can join a batch led by `head` of `rows` rows. */
static int fits_batch(const server_model *m, const server_job *head, const server_job *job,
                      int64_t rows)
{
    if (rows + job_batch(m, job) > (int64_t)m->max_batch_size)
        return 0;
    for (size_t i = 0; i < m->n_inputs; i++) {
        const rn_tensor *a = head->infer.inputs[i].tensor, *b = job->infer.inputs[i].tensor;
        for (size_t d = 1; d < rn_tensor_rank(a); d++)
            if (rn_tensor_dims(a)[d] != rn_tensor_dims(b)[d])
                return 0;
    }
    return 1;
}

static int is_preferred(const server_model *m, int64_t rows)
{
    for (size_t i = 0; i < m->n_preferred; i++)
        if ((int64_t)m->preferred[i] == rows)
            return 1;
    return 0;
}

/* How many jobs at the head of the queue (not empty) make the next run, 0
 * when they should wait for more: the longest prefix that fits together
 * and has a preferred batch size; else, once the batch is full (the next
 * job does not fit), the delay is 0 or the head waited it, all that fits. */
static size_t batch_take(const server_model *m, uint64_t now)
{
    const server_job *head = m->queue_head, *last = head;
    if (m->max_batch_size == 0)
        return 1;
    int64_t rows = job_batch(m, head);
    size_t n = 1, preferred = is_preferred(m, rows) ? 1 : 0;
    int full = 0;
    for (;;) {
        if (last->next == NULL) {
            full = rows == (int64_t)m->max_batch_size;
            break;
        }
        if (!fits_batch(m, head, last->next, rows)) {
            full = 1;
            break;
        }
        last = last->next;
        rows += job_batch(m, last);
        n++;
        if (is_preferred(m, rows))
            preferred = n;
    }
    if (preferred > 0)
        return preferred;
    if (full || m->max_queue_delay_us == 0 || now >= head->queued_ns + m->max_queue_delay_us * 1000)
        return n;
    return 0;
}

/* Takes the next run off the queue (m->lock held): the head job, and with
 * batching the jobs right behind it that batch_take joins to it; NULL when
 * the queue is empty or waits to fill. Jobs at the head past their deadline
 * go to *expired instead. */
static server_job *dequeue_run(server_model *m, server_job **expired)
{
    uint64_t now = server_now_ns();
    while (m->queue_head != NULL && m->queue_head->deadline_ns != 0 &&
           m->queue_head->deadline_ns < now) {
        server_job *late = m->queue_head;
        m->queue_head = late->next;
        m->queued--;
        late->next = *expired;
        *expired = late;
    }
    server_job *head = m->queue_head;
    if (head == NULL) {
        m->queue_tail = NULL;
        return NULL;
    }
    size_t taken = batch_take(m, now);
    if (taken == 0)
        return NULL;
    server_job *last = head;
    for (size_t i = 1; i < taken; i++)
        last = last->next;
    m->queue_head = last->next;
    if (m->queue_head == NULL)
        m->queue_tail = NULL;
    last->next = NULL;
    m->queued -= taken;
    return head;
}

static void answer_expired(server_model *m, server_job *late)
{
    while (late != NULL) {
        server_job *after = late->next;
        uint64_t waited = (server_now_ns() - late->queued_ns) / 1000;
        rn_set_error(RN_RESULT_NOT_READY,
                     "waited %llu us in the queue, past its timeout of %llu us",
                     (unsigned long long)waited,
                     (unsigned long long)((late->deadline_ns - late->queued_ns) / 1000));
        fail_job(late, 503, "request timed out");
        server_model_finish(m, late);
        late = after;
    }
}

/* Starts every run the queue may start now on free slots. `freed` (or
 * NULL) is a slot whose run just completed; it joins the free list first.
 * When jobs are left waiting for a batch to fill, the timer thread is told. */
static void schedule(server_model *m, server_slot *freed)
{
    server_slot *s = freed;
    for (;;) {
        server_job *expired = NULL, *run = NULL;
        pthread_mutex_lock(&m->lock);
        if (s != NULL) {
            s->next_free = m->free_slots;
            m->free_slots = s;
            s = NULL;
        }
        if (m->free_slots != NULL && (run = dequeue_run(m, &expired)) != NULL) {
            s = m->free_slots;
            m->free_slots = s->next_free;
        } else if (m->has_timer && m->free_slots != NULL && m->queue_head != NULL) {
            pthread_cond_signal(&m->timer_cond);
        }
        pthread_mutex_unlock(&m->lock);
        answer_expired(m, expired);
        if (run == NULL)
            return;
        if (start(s, run))
            s = NULL; /* running; else the jobs were answered and s goes back */
    }
}

/* The batch timer: while jobs wait and a slot is free, sleeps until the
 * head job has waited max_queue_delay_us, then starts what is queued. */
static void *timer_main(void *arg)
{
    server_model *m = arg;
    pthread_mutex_lock(&m->lock);
    while (!m->stopping) {
        if (m->queue_head == NULL || m->free_slots == NULL) {
            pthread_cond_wait(&m->timer_cond, &m->lock);
            continue;
        }
        uint64_t due = m->queue_head->queued_ns + m->max_queue_delay_us * 1000;
        if (server_now_ns() < due) {
            struct timespec until = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
            pthread_cond_timedwait(&m->timer_cond, &m->lock, &until);
            continue;
        }
        pthread_mutex_unlock(&m->lock);
        schedule(m, NULL);
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

static void on_complete(rn_infer_request *request, rn_status status, void *user_data)
{
    server_slot *s = user_data;
    server_model *m = s->model;
    server_job *jobs = s->jobs;
    s->jobs = NULL;
    uint64_t t0 = server_now_ns();
    uint64_t n_jobs = 0;
    for (server_job *j = jobs; j != NULL; j = j->next)
        n_jobs++;
    atomic_fetch_add(&m->stats.infer_us, (t0 - s->started_ns) / 1000 * n_jobs);
    atomic_fetch_add(&m->stats.exec_count, 1);
    if (status != RN_OK) {
        fail_jobs(m, jobs, 500, "inference failed");
    } else {
        int sliced = jobs->next != NULL;
        int64_t row = 0;
        for (server_job *j = jobs; j != NULL; j = j->next) {
            if (j->in_sequence)
                server_sequences_capture(m->sequences, j, request, sliced, row);
            if (j->keep_outputs)
                keep_outputs(m, request, j, sliced, row);
            else
                encode_outputs(m, request, j, sliced, row);
            row += job_batch(m, j);
        }
        atomic_fetch_add(&m->stats.output_us, (server_now_ns() - t0) / 1000 * n_jobs);
        while (jobs != NULL) {
            server_job *next = jobs->next;
            server_model_finish(m, jobs);
            jobs = next;
        }
    }
    schedule(m, s);
}

void server_model_count_failure(server_model *m, uint64_t received_ns)
{
    atomic_fetch_add(&m->stats.failure, 1);
    atomic_store(&m->stats.last_ms, epoch_ms());
    atomic_fetch_add(&m->stats.request_us, (server_now_ns() - received_ns) / 1000);
}

rn_status server_model_submit(server_model *m, server_job *job)
{
    job->queued_ns = server_now_ns();
    uint64_t timeout = job->infer.timeout_us ? job->infer.timeout_us : m->default_timeout_us;
    job->deadline_ns = timeout ? job->queued_ns + timeout * 1000 : 0;
    job->next = NULL;
    if (m->pipeline != NULL) {
        atomic_fetch_add(&m->stats.pending, 1);
        server_pipeline_run(m->pipeline, m, job);
        return RN_OK;
    }
    if (m->sequences != NULL) {
        /* One request of a sequence at a time, in order: the others wait
         * in their sequence, not in the queue, and count as accepted. */
        int now;
        job->in_sequence = 1; /* before the admit: once in, another thread may run it */
        atomic_fetch_add(&m->stats.pending, 1);
        rn_status st = server_sequences_admit(m->sequences, job, &now);
        if (st != RN_OK) {
            job->in_sequence = 0;
            atomic_fetch_sub(&m->stats.pending, 1);
            return st;
        }
        return now ? enqueue(m, job, 0) : RN_OK;
    }
    return enqueue(m, job, 1);
}

/* Puts a job at the tail of the queue and starts what can start. A new
 * request (`bounded`) is refused when the queue is full and no infer
 * request is free, and counts as pending once in; a request that waited in
 * its sequence was counted when it was accepted. */
static rn_status enqueue(server_model *m, server_job *job, int bounded)
{
    job->next = NULL;
    pthread_mutex_lock(&m->lock);
    if (bounded && m->queued >= m->max_queue_size && m->free_slots == NULL) {
        pthread_mutex_unlock(&m->lock);
        return rn_set_error(RN_RESULT_NOT_READY,
                            "model '%s' version %s: the queue is full (%zu waiting, %zu running)",
                            m->name, m->version_text, m->max_queue_size, m->n_slots);
    }
    if (bounded)
        atomic_fetch_add(&m->stats.pending, 1);
    if (m->queue_tail)
        m->queue_tail->next = job;
    else
        m->queue_head = job;
    m->queue_tail = job;
    m->queued++;
    pthread_mutex_unlock(&m->lock);
    schedule(m, NULL);
    return RN_OK;
}
