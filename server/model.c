/* A served model version: infer request pool, bounded queue, counters (see
 * model.h).
 *
 * Each infer request of the pool is a slot. A job takes a free slot or
 * waits in the queue; the slot's completion callback (on runnel's callback
 * executor) encodes the response, calls the job's done and starts the next
 * queued job on the same request, so no server thread ever waits on
 * inference. */
#include "server/model.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct server_slot {
    server_model *model;
    rn_infer_request *request;
    server_job *job; /* the job in flight, NULL when free */
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
    atomic_long refs;
    server_stats stats;

    pthread_mutex_t lock; /* guards the free list and the queue */
    server_slot *free_slots;
    server_job *queue_head, *queue_tail;
    size_t queued;
};

uint64_t server_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_complete(rn_infer_request *request, rn_status status, void *user_data);

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
        rn_status st = rn_compiled_model_create_infer_request(m->compiled, &s->request);
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

rn_status server_model_load(rn_core *core, const char *root, const char *name, int64_t version,
                            const server_model_config *config, const char *device,
                            server_model **out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%" PRId64 "/model.onnx", root, name, version);
    server_model *m = calloc(1, sizeof *m);
    if (m == NULL || (m->name = strdup(name)) == NULL) {
        free(m);
        return rn_set_error(RN_OUT_OF_MEMORY, "model '%s': no memory", name);
    }
    m->version = version;
    snprintf(m->version_text, sizeof m->version_text, "%" PRId64, version);
    m->max_queue_size = config->max_queue_size;
    pthread_mutex_init(&m->lock, NULL);
    const char *dev = config->device ? config->device : device;
    rn_model *model = NULL;
    rn_status st = rn_core_read_model(core, path, &model);
    if (st == RN_OK)
        st = rn_core_compile_model(core, model, dev, config->properties, config->n_properties,
                                   &m->compiled);
    rn_model_free(model);
    if (st == RN_OK)
        st = create_slots(m);
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
    for (size_t i = 0; i < m->n_slots; i++) {
        rn_infer_request_wait(m->slots[i].request); /* its callback has returned */
        rn_infer_request_free(m->slots[i].request);
    }
    free(m->slots);
    rn_compiled_model_free(m->compiled);
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
server_stats *server_model_stats(server_model *m)
{
    return &m->stats;
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
    size_t n = rn_compiled_model_input_count(m->compiled);
    for (size_t j = 0; j < infer->n_inputs; j++) {
        size_t i = 0;
        rn_port port;
        for (; i < n; i++)
            if (rn_compiled_model_input(m->compiled, i, &port) == RN_OK &&
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
        rn_compiled_model_input(m->compiled, i, &port);
        if (i >= infer->n_inputs || strcmp(infer->inputs[i].name, port.name) != 0)
            return rn_set_error(RN_INVALID_ARG,
                                "model '%s' takes %zu inputs; input '%s' is missing", m->name, n,
                                port.name);
    }
    size_t n_out = rn_compiled_model_output_count(m->compiled);
    for (size_t j = 0; j < infer->n_outputs; j++) {
        size_t i = 0;
        rn_port port;
        for (; i < n_out; i++)
            if (rn_compiled_model_output(m->compiled, i, &port) == RN_OK &&
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

/* Encodes the outputs the job asked for (every output when it named none). */
static void encode_outputs(server_model *m, rn_infer_request *request, server_job *job)
{
    size_t n_model = rn_compiled_model_output_count(m->compiled);
    size_t n = job->infer.n_outputs ? job->infer.n_outputs : n_model;
    server_output *outs = calloc(n ? n : 1, sizeof *outs);
    if (outs == NULL) {
        rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu outputs", n);
        fail_job(job, 500, "");
        return;
    }
    rn_status st = RN_OK;
    for (size_t i = 0; i < n_model && st == RN_OK; i++) {
        rn_port port;
        rn_tensor *t;
        if ((st = rn_compiled_model_output(m->compiled, i, &port)) != RN_OK ||
            (st = rn_infer_request_get_output_tensor(request, i, &t)) != RN_OK)
            break;
        if (job->infer.n_outputs == 0) {
            outs[i] = (server_output){port.name, t, job->infer.binary_output};
            continue;
        }
        for (size_t j = 0; j < n; j++)
            if (strcmp(job->infer.outputs[j].name, port.name) == 0)
                outs[j] = (server_output){port.name, t, job->infer.outputs[j].binary};
    }
    if (st == RN_OK)
        st = server_response_encode(m->name, m->version_text, job->infer.id, outs, n,
                                    &job->response);
    free(outs);
    if (st != RN_OK)
        fail_job(job, 500, "encoding the response");
    else
        job->http_status = 200;
}

static void finish(server_model *m, server_job *job)
{
    uint64_t now = server_now_ns();
    server_stats *s = &m->stats;
    if (job->http_status == 200) {
        atomic_fetch_add(&s->success, 1);
        atomic_fetch_add(&s->inference_count, 1);
        atomic_fetch_add(&s->exec_count, 1);
    } else {
        atomic_fetch_add(&s->failure, 1);
    }
    atomic_fetch_add(&s->request_us, (now - job->received_ns) / 1000);
    atomic_fetch_sub(&s->pending, 1);
    job->done(job); /* the job may be gone after this */
}

/* Binds a job's inputs to the slot's request and starts it. On failure the
 * job is answered and the slot stays the caller's. */
static int start(server_slot *s, server_job *job)
{
    server_model *m = s->model;
    uint64_t t0 = server_now_ns();
    atomic_fetch_add(&m->stats.queue_us, (t0 - job->queued_ns) / 1000);
    rn_status st = RN_OK;
    for (size_t i = 0; i < job->infer.n_inputs && st == RN_OK; i++)
        st = rn_infer_request_set_input_tensor(s->request, i, job->infer.inputs[i].tensor);
    uint64_t t1 = server_now_ns();
    atomic_fetch_add(&m->stats.input_us, (t1 - t0) / 1000);
    s->job = job;
    s->started_ns = t1;
    if (st == RN_OK && (st = rn_infer_request_start_async(s->request)) == RN_OK)
        return 1;
    s->job = NULL;
    fail_job(job,
             st == RN_INVALID_ARG || st == RN_SHAPE_MISMATCH || st == RN_TYPE_MISMATCH ? 400 : 500,
             "starting inference");
    finish(m, job);
    return 0;
}

/* Starts queued jobs on slot `s` until one runs or the queue is empty; the
 * slot goes back to the free list then. */
static void run_next(server_slot *s)
{
    server_model *m = s->model;
    for (;;) {
        pthread_mutex_lock(&m->lock);
        server_job *next = m->queue_head;
        if (next != NULL) {
            m->queue_head = next->next;
            if (m->queue_head == NULL)
                m->queue_tail = NULL;
            m->queued--;
        } else {
            s->next_free = m->free_slots;
            m->free_slots = s;
        }
        pthread_mutex_unlock(&m->lock);
        if (next == NULL || start(s, next))
            return;
    }
}

static void on_complete(rn_infer_request *request, rn_status status, void *user_data)
{
    server_slot *s = user_data;
    server_model *m = s->model;
    server_job *job = s->job;
    s->job = NULL;
    uint64_t t0 = server_now_ns();
    atomic_fetch_add(&m->stats.infer_us, (t0 - s->started_ns) / 1000);
    if (status == RN_OK) {
        encode_outputs(m, request, job);
    } else {
        fail_job(job, 500, "inference failed");
    }
    atomic_fetch_add(&m->stats.output_us, (server_now_ns() - t0) / 1000);
    finish(m, job);
    run_next(s);
}

void server_model_count_failure(server_model *m, uint64_t received_ns)
{
    atomic_fetch_add(&m->stats.failure, 1);
    atomic_fetch_add(&m->stats.request_us, (server_now_ns() - received_ns) / 1000);
}

rn_status server_model_submit(server_model *m, server_job *job)
{
    job->queued_ns = server_now_ns();
    job->next = NULL;
    pthread_mutex_lock(&m->lock);
    server_slot *s = m->free_slots;
    if (s != NULL) {
        m->free_slots = s->next_free;
    } else if (m->queued < m->max_queue_size) {
        if (m->queue_tail)
            m->queue_tail->next = job;
        else
            m->queue_head = job;
        m->queue_tail = job;
        m->queued++;
    } else {
        pthread_mutex_unlock(&m->lock);
        return rn_set_error(RN_RESULT_NOT_READY,
                            "model '%s' version %s: the queue is full (%zu waiting, %zu running)",
                            m->name, m->version_text, m->max_queue_size, m->n_slots);
    }
    atomic_fetch_add(&m->stats.pending, 1);
    pthread_mutex_unlock(&m->lock);
    if (s != NULL && !start(s, job))
        run_next(s);
    return RN_OK;
}
