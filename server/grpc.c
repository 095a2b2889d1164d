/* The gRPC front of runnel-server (see grpc.h).
 *
 * One completion queue, served by `threads` threads. Every call is an `rpc`
 * whose operations carry tags naming the rpc and the step that completed:
 *
 *   unary:   ACCEPT -> RECV (the request) -> answer -> FINISH (status sent) -> freed
 *   stream:  ACCEPT -> RECV -> RECV -> ... -> RECV of nothing (half-close)
 *            with a SEND per answer, one at a time in completion order,
 *            then FINISH once every request of the stream has been answered.
 *
 * Answers other than infer are made on the queue thread. An infer request
 * is decoded there (server/grpc_codec.c), bound and submitted to its model
 * like an HTTP one, with the gRPC encoder; the model's completion callback
 * starts the batch that sends the answer. gRPC wants the batches of a call
 * started one at a time, receives apart from sends: a unary call has one
 * batch at a time, and a stream's sends are started under its lock. */
#include "server/grpc.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/version.h"
#include "server/extension.h"
#include "server/grpc_codec.h"
#include "server/grpc_listen.h"
#include "server/kserve.pb-c.h"
#include "server/model.h"

#define GRPC_SERVICE    "/inference.GRPCInferenceService/"
#define WAITING_ACCEPTS 64

struct server_grpc {
    server_registry *registry;
    server_byte_budget *budget;
    grpc_server *server;
    server_grpc_listener *listener; /* accepts connections, within the limits */
    grpc_completion_queue *cq;
    pthread_t *threads;
    unsigned n_threads;
    int port;
    atomic_int ready;
    atomic_int stopping;
    atomic_long in_flight; /* infer requests submitted and not yet answered */
    /* Unary infer calls from their accept until their status has gone
     * (FINISH): the drain waits for them too (a while) before it cancels
     * what is left, which would cut a call still being received, or one
     * whose answer gRPC is still writing. */
    atomic_long unary;
    atomic_long live; /* rpcs not yet freed (waiting accepts included) */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int shut_down; /* the server's shutdown tag came back */
};

typedef enum tag_kind { TAG_ACCEPT, TAG_RECV, TAG_SEND, TAG_FINISH, TAG_SHUTDOWN } tag_kind;

typedef struct rpc rpc;
typedef struct rpc_tag {
    rpc *call;
    tag_kind kind;
} rpc_tag;

/* One infer request: a unary call's, or one of a stream's. */
typedef struct infer_call {
    rpc *call;
    server_model *model; /* held while the job is in flight */
    server_grpc_infer request;
    server_job job;
    grpc_byte_buffer *message; /* a stream's answer, once made */
    size_t reserved;           /* of the byte budget, given back when freed */
    struct infer_call *next;   /* a stream's answers waiting to be sent */
} infer_call;

typedef enum method_kind { METHOD_UNKNOWN, METHOD_SYNC, METHOD_INFER, METHOD_STREAM } method_kind;

typedef int (*sync_handler)(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                            char *message, size_t message_size);

struct rpc {
    server_grpc *g;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array metadata;
    rpc_tag accept, recv, send, finish;
    grpc_byte_buffer *received;
    grpc_byte_buffer *sending; /* the message of the batch in flight */
    grpc_slice status_details;
    int has_status_details;
    int cancelled;
    /* Released before each batch (or accept) is started, acquired when its
     * event is taken: the hand-off from the thread that started it (the
     * model's callback thread, for an answer) to the queue thread goes
     * through gRPC's completion queue, whose synchronization is invisible
     * to ThreadSanitizer (Debian's libgrpc is not instrumented); this makes
     * it visible, for an atomic increment a batch. */
    atomic_uint handoff;
    int counted; /* a unary infer call: counted in g->unary until freed */
    method_kind kind;
    sync_handler handler;
    infer_call *unary; /* a unary ModelInfer's request */

    /* A stream's state, under lock. */
    pthread_mutex_t lock;
    infer_call *queue_head, *queue_tail; /* answered, waiting for their send */
    infer_call *in_send;                 /* the answer being sent */
    int send_busy, initial_sent, recv_done, finishing;
    long open; /* requests submitted and not yet answered */
};

/* ---- messages ---- */

static grpc_byte_buffer *byte_buffer_of(server_response *r)
{
    grpc_slice slice = grpc_slice_new(r->body, r->size, free); /* takes the body */
    r->body = NULL;
    grpc_byte_buffer *b = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    return b;
}

/* ---- the calls' lifetime ---- */

static void request_next_call(server_grpc *g);

static grpc_call_error start_batch(rpc *c, const grpc_op *ops, size_t n, rpc_tag *tag)
{
    atomic_fetch_add_explicit(&c->handoff, 1, memory_order_release);
    return grpc_call_start_batch(c->call, ops, n, tag, NULL);
}

static void free_infer_call(infer_call *ic)
{
    if (ic == NULL)
        return;
    server_byte_budget_give(ic->call->g->budget, ic->reserved);
    server_grpc_infer_clear(&ic->request);
    if (ic->message != NULL)
        grpc_byte_buffer_destroy(ic->message);
    free(ic->job.response.body);
    free(ic->job.error);
    free(ic);
}

static infer_call *new_infer_call(rpc *c)
{
    infer_call *ic = calloc(1, sizeof *ic);
    if (ic != NULL)
        ic->call = c;
    return ic;
}

static void free_rpc(rpc *c)
{
    server_grpc *g = c->g;
    if (c->counted)
        atomic_fetch_sub(&c->g->unary, 1);
    if (c->call != NULL)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->metadata);
    if (c->received != NULL)
        grpc_byte_buffer_destroy(c->received);
    if (c->sending != NULL)
        grpc_byte_buffer_destroy(c->sending);
    if (c->has_status_details)
        grpc_slice_unref(c->status_details);
    free_infer_call(c->unary);
    pthread_mutex_destroy(&c->lock);
    free(c);
    atomic_fetch_sub(&g->live, 1); /* last: the stop may then destroy the server */
}

/* Sends the status (and `reply`, when not NULL) and ends the call; FINISH
 * frees it. Initial metadata goes too unless a stream sent it already. */
static void finish(rpc *c, int code, const char *message, grpc_byte_buffer *reply)
{
    grpc_op ops[4];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    if (!c->initial_sent) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        n++;
        c->initial_sent = 1;
    }
    if (reply != NULL) {
        c->sending = reply;
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = reply;
        n++;
    }
    c->status_details = grpc_slice_from_copied_string(message ? message : "");
    c->has_status_details = 1;
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)code;
    ops[n].data.send_status_from_server.status_details = &c->status_details;
    n++;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
    n++;
    if (start_batch(c, ops, n, &c->finish) != GRPC_CALL_OK)
        fprintf(stderr, "runnel-server: gRPC: cannot answer a call (left open)\n");
}

static void start_recv(rpc *c)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->received;
    if (start_batch(c, &op, 1, &c->recv) != GRPC_CALL_OK)
        finish(c, GRPC_STATUS_INTERNAL, "cannot read the request", NULL);
}

/* ---- infer ---- */

static rn_status encode_unary(const server_job *job, const char *model, const char *version,
                              const server_output *outputs, size_t n, server_response *out)
{
    return server_grpc_response_encode(model, version, job->infer.id, outputs, n, 0, out);
}

static rn_status encode_stream(const server_job *job, const char *model, const char *version,
                               const server_output *outputs, size_t n, server_response *out)
{
    return server_grpc_response_encode(model, version, job->infer.id, outputs, n, 1, out);
}

static void stream_answered(rpc *c, infer_call *ic);

/* The model answered (a runnel callback thread, or submit's). */
static void infer_done(server_job *job)
{
    infer_call *ic = job->user;
    rpc *c = ic->call;
    server_grpc *g = c->g;
    server_model_release(ic->model);
    ic->model = NULL;
    if (c->kind == METHOD_STREAM) {
        stream_answered(c, ic);
    } else if (job->http_status == 200) {
        finish(c, GRPC_STATUS_OK, NULL, byte_buffer_of(&job->response));
    } else {
        finish(c, server_grpc_status_of_http(job->http_status),
               job->error ? job->error : "out of memory", NULL);
    }
    atomic_fetch_sub(&g->in_flight, 1);
}

/* Decodes, binds and submits one infer request, its message in pieces. 0
 * with the job submitted (infer_done will run); else the gRPC status, the
 * message in `message`. */
static int submit_infer(server_grpc *g, infer_call *ic, const server_grpc_piece *pieces,
                        size_t n_pieces, size_t size, char *message, size_t message_size)
{
    uint64_t received = server_now_ns();
    if (!server_byte_budget_take(g->budget, size)) {
        snprintf(message, message_size,
                 "the server is busy: it holds %zu bytes of requests, and %zu more would pass its "
                 "limit of %zu (--max-buffered-bytes); retry later",
                 atomic_load(&g->budget->held), size, g->budget->limit);
        return GRPC_STATUS_RESOURCE_EXHAUSTED;
    }
    ic->reserved = size;
    rn_status st = server_grpc_infer_decode_pieces(pieces, n_pieces, &ic->request);
    if (st != RN_OK) {
        snprintf(message, message_size, "%s", rn_last_error());
        return GRPC_STATUS_INVALID_ARGUMENT;
    }
    server_model *m = server_registry_find(g->registry, ic->request.model, ic->request.version);
    if (m == NULL) {
        snprintf(message, message_size, "%s", rn_last_error());
        return GRPC_STATUS_NOT_FOUND;
    }
    if ((st = server_model_bind(m, &ic->request.infer)) != RN_OK) {
        server_model_count_failure(m, received);
        server_model_release(m);
        snprintf(message, message_size, "%s", rn_last_error());
        return GRPC_STATUS_INVALID_ARGUMENT;
    }
    server_job *job = &ic->job;
    job->infer = ic->request.infer; /* a view: the request owns and frees it */
    job->done = infer_done;
    job->user = ic;
    job->received_ns = received;
    job->encode = ic->call->kind == METHOD_STREAM ? encode_stream : encode_unary;
    ic->model = m;
    atomic_fetch_add(&g->in_flight, 1);
    if ((st = server_model_submit(m, job)) != RN_OK) {
        atomic_fetch_sub(&g->in_flight, 1);
        ic->model = NULL;
        server_model_count_failure(m, received);
        server_model_release(m);
        snprintf(message, message_size, "%s", rn_last_error());
        return GRPC_STATUS_UNAVAILABLE;
    }
    return GRPC_STATUS_OK;
}

/* ---- ModelStreamInfer ---- */

/* Starts sending the stream's next answer (c->lock held, no send busy). */
static void start_send_locked(rpc *c)
{
    infer_call *ic = c->queue_head;
    c->queue_head = ic->next;
    if (c->queue_head == NULL)
        c->queue_tail = NULL;
    c->in_send = ic;
    c->send_busy = 1;
    grpc_op ops[2];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    if (!c->initial_sent) {
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
        c->initial_sent = 1;
    }
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].data.send_message.send_message = ic->message;
    n++;
    if (start_batch(c, ops, n, &c->send) != GRPC_CALL_OK)
        fprintf(stderr, "runnel-server: gRPC: cannot send a stream's answer\n");
}

/* Whether the stream is over: the client half-closed and every request has
 * been answered and sent (c->lock held). Then it is marked finishing, and
 * the caller finishes it after unlocking (FINISH may free it at once). */
static int should_finish_locked(rpc *c)
{
    if (!c->recv_done || c->open > 0 || c->send_busy || c->queue_head != NULL || c->finishing)
        return 0;
    c->finishing = 1;
    return 1;
}

/* One request of a stream has its answer (or its error): queue it to send. */
static void stream_answered(rpc *c, infer_call *ic)
{
    server_job *job = &ic->job;
    server_response r = {0};
    rn_status st;
    if (job->http_status == 200) {
        r = job->response;
        job->response.body = NULL;
        st = RN_OK;
    } else {
        const server_grpc_infer *q = &ic->request;
        st = server_grpc_stream_error(q->model, q->version, job->infer.id,
                                      job->error ? job->error : "out of memory", &r);
    }
    ic->message = st == RN_OK ? byte_buffer_of(&r) : NULL;
    pthread_mutex_lock(&c->lock);
    c->open--;
    if (ic->message == NULL) {
        free_infer_call(ic);
    } else {
        if (c->queue_tail)
            c->queue_tail->next = ic;
        else
            c->queue_head = ic;
        c->queue_tail = ic;
        if (!c->send_busy)
            start_send_locked(c);
    }
    int done = should_finish_locked(c);
    pthread_mutex_unlock(&c->lock);
    if (done)
        finish(c, GRPC_STATUS_OK, NULL, NULL);
}

static void stream_sent(rpc *c)
{
    pthread_mutex_lock(&c->lock);
    free_infer_call(c->in_send);
    c->in_send = NULL;
    c->send_busy = 0;
    if (c->queue_head != NULL)
        start_send_locked(c);
    int done = should_finish_locked(c);
    pthread_mutex_unlock(&c->lock);
    if (done)
        finish(c, GRPC_STATUS_OK, NULL, NULL);
}

/* A request of the stream arrived (data), or the client half-closed (NULL). */
static void stream_received(rpc *c, const server_grpc_piece *pieces, size_t n_pieces, size_t size,
                            int more)
{
    if (!more) {
        pthread_mutex_lock(&c->lock);
        c->recv_done = 1;
        int done = should_finish_locked(c);
        pthread_mutex_unlock(&c->lock);
        if (done)
            finish(c, GRPC_STATUS_OK, NULL, NULL);
        return;
    }
    infer_call *ic = new_infer_call(c);
    if (ic == NULL) {
        finish(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "no memory for the request", NULL);
        return;
    }
    pthread_mutex_lock(&c->lock);
    c->open++; /* before the submit: its answer may come first */
    pthread_mutex_unlock(&c->lock);
    char message[2048];
    int code = GRPC_STATUS_UNAVAILABLE;
    /* Stopping: a stream that keeps sending would keep the drain from
     * ending; its later requests are answered, with an error. */
    if (atomic_load(&c->g->stopping))
        snprintf(message, sizeof message, "the server is shutting down");
    else
        code = submit_infer(c->g, ic, pieces, n_pieces, size, message, sizeof message);
    if (code != GRPC_STATUS_OK) {
        ic->job.http_status = 400;
        ic->job.error = strdup(message);
        stream_answered(c, ic);
    }
}

/* ---- the other methods ---- */

static void set_message(char *message, size_t size, const char *text)
{
    snprintf(message, size, "%s", text);
}

/* The name and version of ModelReady, ModelMetadata and ModelConfig
 * requests (the same two fields), as a ModelReadyRequest. */
static Inference__ModelReadyRequest *model_request(const uint8_t *data, size_t size)
{
    return inference__model_ready_request__unpack(NULL, size, data);
}

/* Looks the model of a request up; NULL with the status and message set. */
static server_model *find_model(server_grpc *g, const uint8_t *data, size_t size, int *code,
                                char *message, size_t message_size)
{
    Inference__ModelReadyRequest *q = model_request(data, size);
    if (q == NULL) {
        *code = GRPC_STATUS_INVALID_ARGUMENT;
        set_message(message, message_size, "the message is not a model request (name, version)");
        return NULL;
    }
    server_model *m = server_registry_find(g->registry, q->name, q->version);
    inference__model_ready_request__free_unpacked(q, NULL);
    if (m == NULL) {
        *code = GRPC_STATUS_NOT_FOUND;
        set_message(message, message_size, rn_last_error());
    }
    return m;
}

static int pack_reply(const ProtobufCMessage *reply, server_response *out, char *message,
                      size_t message_size)
{
    if (server_grpc_pack(reply, out) == RN_OK)
        return GRPC_STATUS_OK;
    set_message(message, message_size, rn_last_error());
    return GRPC_STATUS_RESOURCE_EXHAUSTED;
}

static int server_live(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                       char *message, size_t message_size)
{
    (void)g, (void)data, (void)size;
    Inference__ServerLiveResponse r = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
    r.live = 1;
    return pack_reply(&r.base, out, message, message_size);
}

static int server_ready(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                        char *message, size_t message_size)
{
    (void)data, (void)size;
    Inference__ServerReadyResponse r = INFERENCE__SERVER_READY_RESPONSE__INIT;
    r.ready = atomic_load(&g->ready);
    return pack_reply(&r.base, out, message, message_size);
}

static int model_ready(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                       char *message, size_t message_size)
{
    int code;
    server_model *m = find_model(g, data, size, &code, message, message_size);
    if (m == NULL)
        return code;
    server_model_release(m);
    Inference__ModelReadyResponse r = INFERENCE__MODEL_READY_RESPONSE__INIT;
    r.ready = atomic_load(&g->ready);
    return pack_reply(&r.base, out, message, message_size);
}

static int server_metadata(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                           char *message, size_t message_size)
{
    (void)g, (void)data, (void)size;
#define SERVER_EXTENSION_(name) name,
    static const char *const extensions[] = {SERVER_EXTENSIONS(SERVER_EXTENSION_)};
#undef SERVER_EXTENSION_
    Inference__ServerMetadataResponse r = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
    r.name = "runnel-server";
    r.version = RN_VERSION_STRING;
    r.n_extensions = sizeof extensions / sizeof *extensions;
    r.extensions = (char **)extensions;
    return pack_reply(&r.base, out, message, message_size);
}

typedef Inference__ModelMetadataResponse__TensorMetadata tensor_metadata;

/* The loaded versions of a model (copies). */
typedef struct versions_of {
    const char *name;
    char **list;
    size_t n, cap;
} versions_of;

static void add_version(server_model *m, void *user)
{
    versions_of *v = user;
    if (strcmp(server_model_name(m), v->name) != 0 || v->n == v->cap)
        return;
    /* a copy: another version may be unloaded once the registry's lock is released */
    if ((v->list[v->n] = strdup(server_model_version_text(m))) != NULL)
        v->n++;
}

static void count_model(server_model *m, void *user)
{
    (void)m;
    (*(size_t *)user)++;
}

/* Fills metadata entries from ports (n of them); shapes point into ports. */
static void fill_tensors(const server_model *m, int outputs, rn_port *ports, tensor_metadata *t,
                         tensor_metadata **list, size_t n)
{
    static int64_t any_shape[1] = {-1};
    for (size_t i = 0; i < n; i++) {
        tensor_metadata e = INFERENCE__MODEL_METADATA_RESPONSE__TENSOR_METADATA__INIT;
        rn_status st =
            outputs ? server_model_output(m, i, &ports[i]) : server_model_input(m, i, &ports[i]);
        if (st == RN_OK) {
            const char *dt = server_datatype_name(ports[i].element_type);
            e.name = (char *)ports[i].name;
            e.datatype = (char *)(dt ? dt : "UNSUPPORTED");
            if (ports[i].shape.rank >= 0) {
                e.n_shape = (size_t)ports[i].shape.rank;
                e.shape = ports[i].shape.dims;
            } else {
                e.n_shape = 1;
                e.shape = any_shape;
            }
        }
        t[i] = e;
        list[i] = &t[i];
    }
}

static int model_metadata(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                          char *message, size_t message_size)
{
    int code;
    server_model *m = find_model(g, data, size, &code, message, message_size);
    if (m == NULL)
        return code;
    size_t n_in = server_model_input_count(m), n_out = server_model_output_count(m), cap = 0;
    server_registry_foreach(g->registry, count_model, &cap);
    versions_of versions = {server_model_name(m), calloc(cap + 1, sizeof(char *)), 0, cap};
    rn_port *ports = calloc(n_in + n_out + 1, sizeof *ports);
    tensor_metadata *t = calloc(n_in + n_out + 1, sizeof *t);
    tensor_metadata **list = calloc(n_in + n_out + 1, sizeof *list);
    code = GRPC_STATUS_RESOURCE_EXHAUSTED;
    set_message(message, message_size, "no memory for the metadata");
    if (versions.list && ports && t && list) {
        server_registry_foreach(g->registry, add_version, &versions);
        fill_tensors(m, 0, ports, t, list, n_in);
        fill_tensors(m, 1, ports + n_in, t + n_in, list + n_in, n_out);
        Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
        r.name = (char *)server_model_name(m);
        r.n_versions = versions.n;
        r.versions = versions.list;
        r.platform = server_model_is_pipeline(m) ? "ensemble" : "onnx";
        r.n_inputs = n_in;
        r.inputs = list;
        r.n_outputs = n_out;
        r.outputs = list + n_in;
        code = pack_reply(&r.base, out, message, message_size);
    }
    free(list);
    free(t);
    free(ports);
    for (size_t i = 0; i < versions.n; i++)
        free(versions.list[i]);
    free(versions.list);
    server_model_release(m);
    return code;
}

/* Triton's DataType of an element type (by its name in the enum). */
static Inference__DataType config_type(rn_element_type type)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value_by_name(
        &inference__data_type__descriptor, server_config_type_name(type));
    return v ? (Inference__DataType)v->value : INFERENCE__DATA_TYPE__TYPE_INVALID;
}

static int model_config(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                        char *message, size_t message_size)
{
    int code;
    server_model *m = find_model(g, data, size, &code, message, message_size);
    if (m == NULL)
        return code;
    size_t n_in = server_model_input_count(m), n_out = server_model_output_count(m);
    size_t batch = server_model_max_batch_size(m), skip = batch > 0 ? 1 : 0, n_pref;
    const size_t *pref = server_model_preferred(m, &n_pref);
    Inference__ModelInput *ins = calloc(n_in + 1, sizeof *ins),
                          **in_list = calloc(n_in + 1, sizeof *in_list);
    Inference__ModelOutput *outs = calloc(n_out + 1, sizeof *outs),
                           **out_list = calloc(n_out + 1, sizeof *out_list);
    int32_t *preferred = calloc(n_pref + 1, sizeof *preferred);
    rn_port *ports = calloc(n_in + n_out + 1, sizeof *ports);
    code = GRPC_STATUS_RESOURCE_EXHAUSTED;
    set_message(message, message_size, "no memory for the config");
    if (ins && in_list && outs && out_list && preferred && ports) {
        for (size_t i = 0; i < n_in + n_out; i++) {
            int is_out = i >= n_in;
            rn_port *p = &ports[i];
            if ((is_out ? server_model_output(m, i - n_in, p) : server_model_input(m, i, p)) !=
                RN_OK)
                continue;
            /* dims without the batch dim when the server batches, as Triton's */
            size_t rank = p->shape.rank > 0 ? (size_t)p->shape.rank : 0;
            size_t from = rank >= skip ? skip : 0;
            if (is_out) {
                Inference__ModelOutput o = INFERENCE__MODEL_OUTPUT__INIT;
                o.name = (char *)p->name;
                o.data_type = config_type(p->element_type);
                o.n_dims = rank - from;
                o.dims = p->shape.dims + from;
                outs[i - n_in] = o;
                out_list[i - n_in] = &outs[i - n_in];
            } else {
                Inference__ModelInput o = INFERENCE__MODEL_INPUT__INIT;
                o.name = (char *)p->name;
                o.data_type = config_type(p->element_type);
                o.n_dims = rank - from;
                o.dims = p->shape.dims + from;
                ins[i] = o;
                in_list[i] = &ins[i];
            }
        }
        Inference__ModelDynamicBatching dynamic = INFERENCE__MODEL_DYNAMIC_BATCHING__INIT;
        for (size_t i = 0; i < n_pref; i++)
            preferred[i] = (int32_t)pref[i];
        dynamic.n_preferred_batch_size = n_pref;
        dynamic.preferred_batch_size = preferred;
        dynamic.max_queue_delay_microseconds = server_model_queue_delay_us(m);
        Inference__ModelConfig config = INFERENCE__MODEL_CONFIG__INIT;
        config.name = (char *)server_model_name(m);
        config.platform = server_model_is_pipeline(m) ? "ensemble" : "onnx";
        config.backend = "runnel";
        config.max_batch_size = (int32_t)batch;
        config.n_input = n_in;
        config.input = in_list;
        config.n_output = n_out;
        config.output = out_list;
        config.dynamic_batching = batch > 0 ? &dynamic : NULL;
        Inference__ModelConfigResponse r = INFERENCE__MODEL_CONFIG_RESPONSE__INIT;
        r.config = &config;
        code = pack_reply(&r.base, out, message, message_size);
    }
    free(ports);
    free(preferred);
    free(out_list);
    free(outs);
    free(in_list);
    free(ins);
    server_model_release(m);
    return code;
}

/* ModelStatistics: the versions that match, gathered under the registry's lock. */
typedef struct stats_pass {
    const char *name, *version; /* "" : any */
    Inference__ModelStatistics *stats;
    Inference__InferStatistics *infer;
    Inference__StatisticDuration *durations; /* 6 per version */
    size_t n, cap;
} stats_pass;

static void add_stats(server_model *m, void *user)
{
    stats_pass *p = user;
    if ((*p->name && strcmp(server_model_name(m), p->name) != 0) ||
        (*p->version && strcmp(server_model_version_text(m), p->version) != 0) || p->n == p->cap)
        return;
    server_statistics s;
    server_model_statistics(m, &s);
    Inference__StatisticDuration *d = &p->durations[6 * p->n];
    const uint64_t counts[6] = {s.success_count, s.fail_count, s.ran, s.ran, s.ran, s.ran};
    const uint64_t ns[6] = {s.success_ns, s.fail_ns,  s.queue_ns,
                            s.input_ns,   s.infer_ns, s.output_ns};
    for (int i = 0; i < 6; i++) {
        Inference__StatisticDuration e = INFERENCE__STATISTIC_DURATION__INIT;
        e.count = counts[i];
        e.ns = ns[i];
        d[i] = e;
    }
    Inference__InferStatistics is = INFERENCE__INFER_STATISTICS__INIT;
    is.success = &d[0];
    is.fail = &d[1];
    is.queue = &d[2];
    is.compute_input = &d[3];
    is.compute_infer = &d[4];
    is.compute_output = &d[5];
    p->infer[p->n] = is;
    Inference__ModelStatistics ms = INFERENCE__MODEL_STATISTICS__INIT;
    /* copies: m may be unloaded once the registry's lock is released */
    ms.name = strdup(server_model_name(m));
    ms.version = strdup(server_model_version_text(m));
    if (ms.name == NULL || ms.version == NULL) {
        free(ms.name);
        free(ms.version);
        return;
    }
    ms.last_inference = s.last_ms;
    ms.inference_count = s.inference_count;
    ms.execution_count = s.execution_count;
    ms.inference_stats = &p->infer[p->n];
    p->stats[p->n++] = ms;
}

static int model_statistics(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                            char *message, size_t message_size)
{
    Inference__ModelStatisticsRequest *q =
        inference__model_statistics_request__unpack(NULL, size, data);
    if (q == NULL) {
        set_message(message, message_size, "the message is not a ModelStatisticsRequest");
        return GRPC_STATUS_INVALID_ARGUMENT;
    }
    int code = GRPC_STATUS_OK;
    if (*q->name) { /* a named model must be loaded (the version too, when named) */
        server_model *m = server_registry_find(g->registry, q->name, q->version);
        if (m == NULL) {
            set_message(message, message_size, rn_last_error());
            code = GRPC_STATUS_NOT_FOUND;
        } else {
            server_model_release(m);
        }
    }
    size_t cap = 0;
    server_registry_foreach(g->registry, count_model, &cap);
    cap += 8; /* versions loaded meanwhile are left out */
    stats_pass p = {q->name,
                    q->version,
                    calloc(cap, sizeof *p.stats),
                    calloc(cap, sizeof *p.infer),
                    calloc(6 * cap, sizeof *p.durations),
                    0,
                    cap};
    Inference__ModelStatistics **list = calloc(cap, sizeof *list);
    if (code == GRPC_STATUS_OK && !(p.stats && p.infer && p.durations && list)) {
        set_message(message, message_size, "no memory for the statistics");
        code = GRPC_STATUS_RESOURCE_EXHAUSTED;
    }
    if (code == GRPC_STATUS_OK) {
        server_registry_foreach(g->registry, add_stats, &p);
        for (size_t i = 0; i < p.n; i++)
            list[i] = &p.stats[i];
        Inference__ModelStatisticsResponse r = INFERENCE__MODEL_STATISTICS_RESPONSE__INIT;
        r.n_model_stats = p.n;
        r.model_stats = list;
        code = pack_reply(&r.base, out, message, message_size);
    }
    for (size_t i = 0; i < p.n; i++) {
        free(p.stats[i].name);
        free(p.stats[i].version);
    }
    free(list);
    free(p.durations);
    free(p.infer);
    free(p.stats);
    inference__model_statistics_request__free_unpacked(q, NULL);
    return code;
}

/* RepositoryIndex: the entries, copied while the registry's lock is held. */
typedef struct index_pass {
    Inference__RepositoryIndexResponse__ModelIndex *entries;
    size_t n, cap;
    int failed;
} index_pass;

static void add_index_entry(const char *name, const char *version, const char *state,
                            const char *reason, void *user)
{
    index_pass *p = user;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        void *grown = realloc(p->entries, cap * sizeof *p->entries);
        if (grown == NULL) {
            p->failed = 1;
            return;
        }
        p->entries = grown;
        p->cap = cap;
    }
    Inference__RepositoryIndexResponse__ModelIndex e =
        INFERENCE__REPOSITORY_INDEX_RESPONSE__MODEL_INDEX__INIT;
    e.name = strdup(name);
    e.version = strdup(version);
    e.state = (char *)state; /* static strings */
    e.reason = (char *)reason;
    if (e.name == NULL || e.version == NULL) {
        free(e.name);
        free(e.version);
        p->failed = 1;
        return;
    }
    p->entries[p->n++] = e;
}

static int repository_index(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                            char *message, size_t message_size)
{
    Inference__RepositoryIndexRequest *q =
        inference__repository_index_request__unpack(NULL, size, data);
    if (q == NULL) {
        set_message(message, message_size, "the message is not a RepositoryIndexRequest");
        return GRPC_STATUS_INVALID_ARGUMENT;
    }
    index_pass p = {0};
    server_registry_index(g->registry, q->ready, add_index_entry, &p);
    inference__repository_index_request__free_unpacked(q, NULL);
    Inference__RepositoryIndexResponse__ModelIndex **list = calloc(p.n + 1, sizeof *list);
    int code = GRPC_STATUS_RESOURCE_EXHAUSTED;
    set_message(message, message_size, "no memory for the index");
    if (list != NULL && !p.failed) {
        for (size_t i = 0; i < p.n; i++)
            list[i] = &p.entries[i];
        Inference__RepositoryIndexResponse r = INFERENCE__REPOSITORY_INDEX_RESPONSE__INIT;
        r.n_models = p.n;
        r.models = list;
        code = pack_reply(&r.base, out, message, message_size);
    }
    for (size_t i = 0; i < p.n; i++) {
        free(p.entries[i].name);
        free(p.entries[i].version);
    }
    free(p.entries);
    free(list);
    return code;
}

/* The gRPC status of a registry error. */
static int status_of(rn_status st)
{
    switch (st) {
    case RN_NOT_FOUND:
        return GRPC_STATUS_NOT_FOUND;
    case RN_NOT_IMPLEMENTED:
        return GRPC_STATUS_FAILED_PRECONDITION;
    case RN_OUT_OF_MEMORY:
        return GRPC_STATUS_RESOURCE_EXHAUSTED;
    default:
        return GRPC_STATUS_INVALID_ARGUMENT; /* the model failed to load: its files or config */
    }
}

static int repository_change(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                             char *message, size_t message_size, int load)
{
    /* Load and unload requests are the same fields. */
    Inference__RepositoryModelLoadRequest *q =
        inference__repository_model_load_request__unpack(NULL, size, data);
    if (q == NULL) {
        set_message(message, message_size, "the message is not a repository request");
        return GRPC_STATUS_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < q->n_parameters; i++) {
        const char *key = q->parameters[i]->key;
        if (!load && strcmp(key, "unload_dependents") == 0)
            continue; /* pipelines look their steps up per request: nothing depends */
        snprintf(message, message_size,
                 "parameter '%s' is not supported (runnel-server loads from the repository)", key);
        inference__repository_model_load_request__free_unpacked(q, NULL);
        return GRPC_STATUS_INVALID_ARGUMENT;
    }
    rn_status st = load ? server_registry_load(g->registry, q->model_name)
                        : server_registry_unload(g->registry, q->model_name);
    inference__repository_model_load_request__free_unpacked(q, NULL);
    if (st != RN_OK) {
        set_message(message, message_size, rn_last_error());
        return status_of(st);
    }
    Inference__RepositoryModelLoadResponse r = INFERENCE__REPOSITORY_MODEL_LOAD_RESPONSE__INIT;
    return pack_reply(&r.base, out, message, message_size); /* both responses are empty */
}

static int repository_load(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                           char *message, size_t message_size)
{
    return repository_change(g, data, size, out, message, message_size, 1);
}

static int repository_unload(server_grpc *g, const uint8_t *data, size_t size, server_response *out,
                             char *message, size_t message_size)
{
    return repository_change(g, data, size, out, message, message_size, 0);
}

static const struct {
    const char *name;
    method_kind kind;
    sync_handler handler;
} methods[] = {
    {"ServerLive", METHOD_SYNC, server_live},
    {"ServerReady", METHOD_SYNC, server_ready},
    {"ModelReady", METHOD_SYNC, model_ready},
    {"ServerMetadata", METHOD_SYNC, server_metadata},
    {"ModelMetadata", METHOD_SYNC, model_metadata},
    {"ModelConfig", METHOD_SYNC, model_config},
    {"ModelStatistics", METHOD_SYNC, model_statistics},
    {"RepositoryIndex", METHOD_SYNC, repository_index},
    {"RepositoryModelLoad", METHOD_SYNC, repository_load},
    {"RepositoryModelUnload", METHOD_SYNC, repository_unload},
    {"ModelInfer", METHOD_INFER, NULL},
    {"ModelStreamInfer", METHOD_STREAM, NULL},
};

/* ---- the completion queue ---- */

/* A call arrived: picks its method, then reads its (first) request. */
static void accepted(rpc *c)
{
    server_grpc *g = c->g;
    if (!atomic_load(&g->stopping))
        request_next_call(g);
    const char *path = (const char *)GRPC_SLICE_START_PTR(c->details.method);
    size_t len = GRPC_SLICE_LENGTH(c->details.method), prefix = strlen(GRPC_SERVICE);
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (len == prefix + strlen(methods[i].name) && memcmp(path, GRPC_SERVICE, prefix) == 0 &&
            memcmp(path + prefix, methods[i].name, len - prefix) == 0) {
            c->kind = methods[i].kind;
            c->handler = methods[i].handler;
        }
    if (c->kind == METHOD_INFER) {
        c->counted = 1;
        atomic_fetch_add(&g->unary, 1);
    }
    if (c->kind == METHOD_UNKNOWN) {
        char message[512];
        snprintf(message, sizeof message, "runnel-server does not serve %.*s",
                 (int)(len > 400 ? 400 : len), path);
        finish(c, GRPC_STATUS_UNIMPLEMENTED, message, NULL);
        return;
    }
    start_recv(c);
}

/* The pieces of a received message: its slices when gRPC holds it
 * uncompressed (an infer request's tensors are copied once, from there, by
 * the decoder; *pieces is `local` or, past LOCAL_PIECES slices, malloc'ed),
 * else one piece, `joined` by gRPC's reader (a sync method always: its
 * handlers take one buffer). 0 when it cannot be read. */
#define LOCAL_PIECES 64
static int message_pieces(grpc_byte_buffer *b, int joined_only, grpc_slice *joined,
                          server_grpc_piece *local, server_grpc_piece **pieces, size_t *n)
{
    const grpc_slice_buffer *sb = &b->data.raw.slice_buffer;
    *pieces = local;
    if (!joined_only && b->type == GRPC_BB_RAW && b->data.raw.compression == GRPC_COMPRESS_NONE &&
        (sb->count <= LOCAL_PIECES || (*pieces = malloc(sb->count * sizeof **pieces)) != NULL)) {
        for (size_t i = 0; i < sb->count; i++)
            (*pieces)[i] = (server_grpc_piece){GRPC_SLICE_START_PTR(sb->slices[i]),
                                               GRPC_SLICE_LENGTH(sb->slices[i])};
        *n = sb->count;
        return 1;
    }
    *pieces = local; /* no memory for the list: joined instead */
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, b))
        return 0;
    *joined = grpc_byte_buffer_reader_readall(&reader);
    grpc_byte_buffer_reader_destroy(&reader);
    local[0] = (server_grpc_piece){GRPC_SLICE_START_PTR(*joined), GRPC_SLICE_LENGTH(*joined)};
    *n = 1;
    return 1;
}

/* A request message arrived (ok and c->received set), or none will. */
static void received(rpc *c, int ok)
{
    grpc_slice joined = grpc_empty_slice();
    server_grpc_piece local[LOCAL_PIECES], *pieces = local;
    size_t n = 0, size = 0;
    grpc_byte_buffer *b = c->received;
    c->received = NULL;
    int have =
        ok && b != NULL && message_pieces(b, c->kind == METHOD_SYNC, &joined, local, &pieces, &n);
    for (size_t i = 0; i < n; i++)
        size += pieces[i].size;
    char message[2048] = "";
    if (c->kind == METHOD_STREAM) {
        stream_received(c, pieces, n, size, have);
        if (have)
            start_recv(c);
    } else if (!have) {
        finish(c, GRPC_STATUS_INVALID_ARGUMENT, "the call carried no request message", NULL);
    } else if (c->kind == METHOD_INFER) {
        infer_call *ic = new_infer_call(c);
        int code = GRPC_STATUS_RESOURCE_EXHAUSTED;
        snprintf(message, sizeof message, "no memory for the request");
        if (ic != NULL) {
            c->unary = ic;
            code = submit_infer(c->g, ic, pieces, n, size, message, sizeof message);
        }
        if (code != GRPC_STATUS_OK) /* else c may be answered and gone already */
            finish(c, code, message, NULL);
    } else {
        server_response out = {0};
        int code = c->handler(c->g, pieces[0].data, pieces[0].size, &out, message, sizeof message);
        finish(c, code, message, code == GRPC_STATUS_OK ? byte_buffer_of(&out) : NULL);
        free(out.body);
    }
    if (pieces != local)
        free(pieces);
    grpc_slice_unref(joined);
    if (b != NULL)
        grpc_byte_buffer_destroy(b);
}

static void request_next_call(server_grpc *g)
{
    rpc *c = calloc(1, sizeof *c);
    if (c == NULL) {
        fprintf(stderr, "runnel-server: gRPC: no memory to accept a call\n");
        return;
    }
    c->g = g;
    atomic_fetch_add(&g->live, 1);
    c->accept = (rpc_tag){c, TAG_ACCEPT};
    c->recv = (rpc_tag){c, TAG_RECV};
    c->send = (rpc_tag){c, TAG_SEND};
    c->finish = (rpc_tag){c, TAG_FINISH};
    pthread_mutex_init(&c->lock, NULL);
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->metadata);
    atomic_fetch_add_explicit(&c->handoff, 1, memory_order_release);
    if (grpc_server_request_call(g->server, &c->call, &c->details, &c->metadata, g->cq, g->cq,
                                 &c->accept) != GRPC_CALL_OK) {
        fprintf(stderr, "runnel-server: gRPC: cannot accept calls\n");
        free_rpc(c);
    }
}

static void *queue_main(void *arg)
{
    server_grpc *g = arg;
    pthread_setname_np(pthread_self(), "rn-grpc-queue"); /* for ps, perf, the tests */
    for (;;) {
        grpc_event e = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (e.type == GRPC_QUEUE_SHUTDOWN)
            return NULL;
        if (e.type != GRPC_OP_COMPLETE)
            continue;
        rpc_tag *tag = e.tag;
        rpc *c = tag->call;
        if (c != NULL)
            (void)atomic_load_explicit(&c->handoff, memory_order_acquire);
        switch (tag->kind) {
        case TAG_SHUTDOWN:
            pthread_mutex_lock(&g->lock);
            g->shut_down = 1;
            pthread_cond_broadcast(&g->cond);
            pthread_mutex_unlock(&g->lock);
            break;
        case TAG_ACCEPT:
            if (e.success)
                accepted(c);
            else
                free_rpc(c); /* the server is shutting down */
            break;
        case TAG_RECV:
            received(c, e.success);
            break;
        case TAG_SEND:
            stream_sent(c);
            break;
        case TAG_FINISH:
            free_rpc(c);
            break;
        }
    }
}

static rpc_tag shutdown_tag = {NULL, TAG_SHUTDOWN};

/* The completion-queue threads: `wanted`, but no more than the CPUs this
 * process may run on. gRPC's poller (epoll1) lets one queue thread poll at
 * a time and, when its poll returns, wakes another to take over the polling
 * while it handles the events: every network wake-up of a call costs one
 * more thread switch than with a single thread, ~15 switches a unary
 * SqueezeNet call at 4 threads against 3 at one. More threads than CPUs buy
 * no parallelism for that price (bench/LOG.md, "gRPC front end per
 * request: queue threads, switches, syscalls"). */
static unsigned queue_threads(unsigned wanted)
{
    unsigned n = wanted ? wanted : 1;
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0 &&
        (unsigned)CPU_COUNT(&cpus) < n)
        n = (unsigned)CPU_COUNT(&cpus);
    return n;
}

rn_status server_grpc_start(server_registry *registry, const server_grpc_config *config,
                            server_grpc **out)
{
    server_grpc *g = calloc(1, sizeof *g);
    unsigned n_threads = queue_threads(config->threads);
    if (g == NULL || (g->threads = calloc(n_threads, sizeof *g->threads)) == NULL) {
        free(g);
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the gRPC server");
    }
    server_grpc_listen_config listen = {config->address, config->port, config->timeout_secs,
                                        config->max_connections, config->max_per_client};
    rn_status st = server_grpc_listen(&listen, &g->listener);
    if (st != RN_OK) {
        free(g->threads);
        free(g);
        return st;
    }
    grpc_init();
    g->registry = registry;
    g->budget = config->budget;
    g->port = server_grpc_listener_port(g->listener);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    int max = config->max_message > INT32_MAX ? INT32_MAX : (int)config->max_message;
    /* Slow and idle clients: a connection must send its preface within the
     * timeout and stay within the connection limits (grpc_listen.c), one
     * without calls for 5 minutes is sent GOAWAY (clients reconnect), a
     * silent peer is found by keepalive pings, and one connection may run
     * at most 1024 calls at once. */
    grpc_arg args[] = {
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = max}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = -1}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_CONNECTION_IDLE_MS, {.integer = 300000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS, {.integer = 60000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, {.integer = 20000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_CONCURRENT_STREAMS, {.integer = 1024}},
    };
    grpc_channel_args channel_args = {sizeof args / sizeof *args, args};
    g->server = grpc_server_create(&channel_args, NULL);
    g->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(g->server, g->cq, NULL);
    grpc_server_start(g->server);
    /* Waiting accepts, each renewed when it is taken: a call that finds
     * none waits in gRPC's own list, which its shutdown ends with
     * CANCELLED instead of letting the drain answer it. */
    for (unsigned i = 0; i < WAITING_ACCEPTS; i++)
        request_next_call(g);
    for (unsigned i = 0; i < n_threads; i++) {
        if (pthread_create(&g->threads[i], NULL, queue_main, g) != 0)
            break;
        g->n_threads = i + 1;
    }
    st = server_grpc_listener_start(g->listener, g->server);
    if (st != RN_OK) {
        server_grpc_stop(g); /* keeps the message: the stop sets none */
        return st;
    }
    *out = g;
    return RN_OK;
}

int server_grpc_port(const server_grpc *g)
{
    return g->port;
}

unsigned server_grpc_queue_threads(const server_grpc *g)
{
    return g->n_threads;
}

void server_grpc_set_ready(server_grpc *g, int ready)
{
    atomic_store(&g->ready, ready);
}

long server_grpc_in_flight(server_grpc *g)
{
    return atomic_load(&g->in_flight);
}

void server_grpc_stop(server_grpc *g)
{
    if (g == NULL)
        return;
    atomic_store(&g->stopping, 1);
    /* New clients are refused from here (the socket is closed); those
     * connected are sent GOAWAY by the shutdown. */
    server_grpc_listener_stop(g->listener);
    grpc_server_shutdown_and_notify(g->server, g->cq, &shutdown_tag); /* no new calls */
    /* Every infer request submitted is answered, however long it takes.
     * Then the unary calls still open (being received, or their answers
     * written: a client that stopped reading or sending holds one, so at
     * most 5 s), until none has been for 20 ms (a call accepted just before
     * the shutdown may still have its accept in the queue). */
    for (int waited = 0, quiet = 0; quiet < 20 && waited < 5000;) {
        usleep(1000);
        if (atomic_load(&g->in_flight) > 0) {
            quiet = 0;
            continue;
        }
        waited++;
        quiet = atomic_load(&g->unary) > 0 ? 0 : quiet + 1;
    }
    grpc_server_cancel_all_calls(g->server); /* streams still open */
    pthread_mutex_lock(&g->lock);
    while (!g->shut_down)
        pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
    /* The shutdown tag can come before the queue threads have taken the
     * last events of the cancelled calls, which start the batches that end
     * them: the queue must not shut down under those (gRPC aborts). Every
     * call ends, cancelled; 10 s bounds a call left open by a failed batch. */
    for (int ms = 0; ms < 10000 && atomic_load(&g->live) > 0; ms++)
        usleep(1000);
    grpc_server_destroy(g->server);
    grpc_completion_queue_shutdown(g->cq);
    for (unsigned i = 0; i < g->n_threads; i++)
        pthread_join(g->threads[i], NULL);
    grpc_completion_queue_destroy(g->cq);
    grpc_shutdown();
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g->threads);
    free(g);
}
