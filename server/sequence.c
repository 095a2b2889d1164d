/* Stateful sequences (see sequence.h). */
#include "server/sequence.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/batch.h"
#include "server/model.h"

typedef struct sequence {
    uint64_t id;
    rn_tensor **state;                 /* one per state pair: the next request's state inputs */
    int busy;                          /* a request of it is admitted and not yet answered */
    int ended;                         /* a request with sequence_end was admitted */
    uint64_t last_ns;                  /* when it was last admitted or answered */
    server_job *wait_head, *wait_tail; /* its requests behind the busy one */
    struct sequence *next;
} sequence;

struct server_sequences {
    size_t n_states;
    size_t *input, *output; /* model port indices of each state pair */
    int64_t dims[8][RN_MAX_RANK];
    size_t ranks[8];
    rn_element_type types[8];
    uint64_t idle_ns;
    size_t max_active;
    pthread_mutex_t lock;
    sequence *active;
    size_t n_active;
};

static rn_status find_port(const rn_compiled_model *c, int output, const char *name, size_t *index,
                           rn_port *port)
{
    size_t n = output ? rn_compiled_model_output_count(c) : rn_compiled_model_input_count(c);
    for (size_t i = 0; i < n; i++)
        if ((output ? rn_compiled_model_output(c, i, port) : rn_compiled_model_input(c, i, port)) ==
                RN_OK &&
            strcmp(port->name, name) == 0) {
            *index = i;
            return RN_OK;
        }
    return rn_set_error(RN_INVALID_ARG, "'sequence': the model has no %s '%s'",
                        output ? "output" : "input", name);
}

rn_status server_sequences_create(const rn_compiled_model *compiled,
                                  const server_model_config *config, int batching,
                                  server_sequences **out)
{
    size_t n = config->n_states;
    if (n > 8)
        return rn_set_error(RN_INVALID_ARG, "'sequence': %zu state pairs, at most 8", n);
    server_sequences *q = calloc(1, sizeof *q);
    if (q == NULL || (q->input = calloc(n, sizeof *q->input)) == NULL ||
        (q->output = calloc(n, sizeof *q->output)) == NULL) {
        server_sequences_free(q);
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the sequences");
    }
    pthread_mutex_init(&q->lock, NULL);
    q->n_states = n;
    q->idle_ns = config->sequence_idle_us * 1000;
    q->max_active = config->max_sequences;
    for (size_t i = 0; i < n; i++) {
        rn_port in, outp;
        rn_status st = find_port(compiled, 0, config->state_inputs[i], &q->input[i], &in);
        if (st == RN_OK)
            st = find_port(compiled, 1, config->state_outputs[i], &q->output[i], &outp);
        int skip = batching ? 1 : 0, same = st == RN_OK && in.element_type == outp.element_type &&
                                            in.shape.rank == outp.shape.rank &&
                                            in.shape.rank >= skip;
        for (int d = skip; same && d < in.shape.rank; d++)
            same = in.shape.dims[d] == outp.shape.dims[d] && in.shape.dims[d] != RN_DIM_DYNAMIC;
        if (st == RN_OK && !same)
            st = rn_set_error(RN_INVALID_ARG,
                              "'sequence': state input '%s' and output '%s' need the same "
                              "datatype and the same static dims%s",
                              in.name, outp.name, batching ? " past the batch dim" : "");
        if (st != RN_OK) {
            server_sequences_free(q);
            return st;
        }
        q->types[i] = in.element_type;
        q->ranks[i] = (size_t)in.shape.rank;
        memcpy(q->dims[i], in.shape.dims, q->ranks[i] * sizeof(int64_t));
        if (batching)
            q->dims[i][0] = 1; /* one row per sequence */
    }
    *out = q;
    return RN_OK;
}

static void free_sequence(const server_sequences *q, sequence *s)
{
    for (size_t i = 0; s->state && i < q->n_states; i++)
        rn_tensor_free(s->state[i]);
    free(s->state);
    free(s);
}

void server_sequences_free(server_sequences *q)
{
    if (q == NULL)
        return;
    while (q->active != NULL) {
        sequence *s = q->active;
        q->active = s->next;
        free_sequence(q, s);
    }
    if (q->input != NULL)
        pthread_mutex_destroy(&q->lock);
    free(q->input);
    free(q->output);
    free(q);
}

/* Drops sequences idle past the limit (q->lock held). */
static void reclaim_idle(server_sequences *q, uint64_t now)
{
    for (sequence **p = &q->active; *p != NULL;) {
        sequence *s = *p;
        /* last_ns may be later than `now` when another thread answered meanwhile */
        if (!s->busy && now > s->last_ns && now - s->last_ns > q->idle_ns) {
            *p = s->next;
            free_sequence(q, s);
            q->n_active--;
        } else {
            p = &s->next;
        }
    }
}

static sequence *find(server_sequences *q, uint64_t id)
{
    for (sequence *s = q->active; s != NULL; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

size_t server_sequences_active(server_sequences *q)
{
    pthread_mutex_lock(&q->lock);
    reclaim_idle(q, server_now_ns());
    size_t n = q->n_active;
    pthread_mutex_unlock(&q->lock);
    return n;
}

int server_sequences_is_state(const server_sequences *q, size_t index)
{
    for (size_t i = 0; i < q->n_states; i++)
        if (q->input[i] == index)
            return 1;
    return 0;
}

rn_status server_sequences_bind(server_sequences *q, const rn_compiled_model *compiled,
                                const char *model, server_infer *infer)
{
    if (infer->sequence_id == 0)
        return rn_set_error(RN_INVALID_ARG,
                            "model '%s' is stateful: a request needs parameters.sequence_id "
                            "(> 0)",
                            model);
    pthread_mutex_lock(&q->lock);
    reclaim_idle(q, server_now_ns());
    int known = find(q, infer->sequence_id) != NULL;
    pthread_mutex_unlock(&q->lock);
    if (!known && !infer->sequence_start)
        return rn_set_error(RN_INVALID_ARG,
                            "sequence %llu of model '%s' is not active: start it with "
                            "sequence_start (an idle sequence is reclaimed after %llu us)",
                            (unsigned long long)infer->sequence_id, model,
                            (unsigned long long)(q->idle_ns / 1000));
    for (size_t i = 0; i < infer->n_inputs; i++)
        for (size_t k = 0; k < q->n_states; k++) {
            rn_port port;
            if (rn_compiled_model_input(compiled, q->input[k], &port) == RN_OK &&
                strcmp(port.name, infer->inputs[i].name) == 0)
                return rn_set_error(RN_INVALID_ARG,
                                    "input '%s' is the sequence state of model '%s', kept by the "
                                    "server",
                                    port.name, model);
        }
    server_input *grown =
        realloc(infer->inputs, (infer->n_inputs + q->n_states) * sizeof *infer->inputs);
    if (grown == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the state inputs");
    infer->inputs = grown;
    for (size_t k = 0; k < q->n_states; k++) {
        rn_port port;
        rn_compiled_model_input(compiled, q->input[k], &port);
        server_input *in = &infer->inputs[infer->n_inputs];
        if ((in->name = strdup(port.name)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the state inputs");
        rn_status st = rn_tensor_create(q->types[k], q->dims[k], q->ranks[k], &in->tensor);
        if (st != RN_OK) {
            free(in->name);
            return st;
        }
        infer->n_inputs++;
    }
    return RN_OK;
}

/* Copies the sequence's state (zeros at a start) into the job's state inputs. */
static void fill_state(const server_sequences *q, sequence *s, server_job *job)
{
    for (size_t k = 0; k < q->n_states; k++) {
        rn_tensor *t = job->infer.inputs[q->input[k]].tensor;
        if (job->infer.sequence_start || s->state[k] == NULL)
            memset(rn_tensor_data(t), 0, rn_tensor_byte_size(t));
        else
            memcpy(rn_tensor_data(t), rn_tensor_data(s->state[k]), rn_tensor_byte_size(t));
    }
    if (job->infer.sequence_start)
        s->ended = 0;
    if (job->infer.sequence_end)
        s->ended = 1;
}

rn_status server_sequences_admit(server_sequences *q, server_job *job, int *now)
{
    pthread_mutex_lock(&q->lock);
    uint64_t t = server_now_ns();
    reclaim_idle(q, t);
    sequence *s = find(q, job->infer.sequence_id);
    if (s == NULL && !job->infer.sequence_start) {
        pthread_mutex_unlock(&q->lock);
        return rn_set_error(RN_RESULT_NOT_READY, "sequence %llu was reclaimed (idle)",
                            (unsigned long long)job->infer.sequence_id);
    }
    if (s == NULL) {
        if (q->n_active >= q->max_active) {
            pthread_mutex_unlock(&q->lock);
            return rn_set_error(RN_RESULT_NOT_READY,
                                "%zu sequences are active, the most this model keeps "
                                "(sequence.max_sequences)",
                                q->n_active);
        }
        if ((s = calloc(1, sizeof *s)) == NULL ||
            (s->state = calloc(q->n_states, sizeof *s->state)) == NULL) {
            free(s);
            pthread_mutex_unlock(&q->lock);
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for a sequence");
        }
        s->id = job->infer.sequence_id;
        s->next = q->active;
        q->active = s;
        q->n_active++;
    }
    s->last_ns = t;
    job->next = NULL;
    if (s->busy) { /* behind the request of its sequence in flight */
        if (s->wait_tail)
            s->wait_tail->next = job;
        else
            s->wait_head = job;
        s->wait_tail = job;
        *now = 0;
    } else {
        s->busy = 1;
        fill_state(q, s, job);
        *now = 1;
    }
    pthread_mutex_unlock(&q->lock);
    return RN_OK;
}

void server_sequences_capture(server_sequences *q, server_job *job, rn_infer_request *request,
                              int sliced, int64_t row)
{
    pthread_mutex_lock(&q->lock);
    sequence *s = find(q, job->infer.sequence_id);
    for (size_t k = 0; s != NULL && k < q->n_states; k++) {
        rn_tensor *t, *slice = NULL, *copy = NULL;
        rn_status st = rn_infer_request_get_output_tensor(request, q->output[k], &t);
        if (st == RN_OK && sliced)
            st = server_batch_slice(t, row, 1, &slice);
        const rn_tensor *from = slice ? slice : t;
        if (st == RN_OK)
            st = server_batch_concat((rn_tensor *const *)&from, 1, &copy);
        rn_tensor_free(slice);
        if (st != RN_OK) {
            fprintf(stderr, "runnel-server: sequence %llu: keeping its state: %s\n",
                    (unsigned long long)s->id, rn_last_error());
            continue;
        }
        rn_tensor_free(s->state[k]);
        s->state[k] = copy;
    }
    pthread_mutex_unlock(&q->lock);
}

server_job *server_sequences_release(server_sequences *q, server_job *job)
{
    pthread_mutex_lock(&q->lock);
    sequence *s = find(q, job->infer.sequence_id);
    server_job *next = NULL;
    if (s != NULL) {
        s->last_ns = server_now_ns();
        if ((next = s->wait_head) != NULL) {
            s->wait_head = next->next;
            if (s->wait_head == NULL)
                s->wait_tail = NULL;
            next->next = NULL;
            fill_state(q, s, next);
        } else {
            s->busy = 0;
            if (s->ended) { /* its last request is answered */
                for (sequence **p = &q->active; *p != NULL; p = &(*p)->next)
                    if (*p == s) {
                        *p = s->next;
                        break;
                    }
                free_sequence(q, s);
                q->n_active--;
            }
        }
    }
    pthread_mutex_unlock(&q->lock);
    return next;
}
