/* rn_infer_request: tensors bound to a device request, sync infer. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

void rn_infer_request_free(rn_infer_request *r)
{
    if (r == NULL)
        return;
    rn_compiled_model *cm = r->compiled;
    if (r->request != NULL)
        cm->ops->request_ops->free(r->request);
    for (size_t i = 0; r->inputs != NULL && r->own_input != NULL && i < cm->n_inputs; i++)
        if (r->own_input[i])
            rn_tensor_free(r->inputs[i]);
    for (size_t i = 0; r->outputs != NULL && r->own_output != NULL && i < cm->n_outputs; i++)
        if (r->own_output[i])
            rn_tensor_free(r->outputs[i]);
    free(r->inputs);
    free(r->own_input);
    free(r->outputs);
    free(r->own_output);
    free(r->user_output);
    for (size_t i = 0; r->dense != NULL && i < cm->n_inputs; i++)
        free(r->dense[i]);
    free(r->dense);
    free(r->dense_bytes);
    bool counted = r->counted;
    free(r);
    if (counted)
        runtime_compiled_release(cm);
}

static rn_status bind_inputs(rn_infer_request *r);

/* RN_REQUEST_BUSY (naming `what`) while an async run is in flight. */
static rn_status check_idle(const rn_infer_request *r, const char *what)
{
    const rn_request_ops *ops = r->compiled->ops->request_ops;
    if (ops->busy != NULL && ops->busy(r->request))
        return rn_set_error(RN_REQUEST_BUSY, "%s: the infer request is running", what);
    return RN_OK;
}

/* A request's own input tensor: in the host memory the device copies
 * fastest when its context has some (NVIDIA's pinned memory, as OpenVINO's
 * GPU plugin gives USM host tensors), so that the upload reads it without a
 * staging copy; plain host memory otherwise. */
static rn_status input_tensor(const rn_compiled_model *cm, rn_element_type type,
                              const int64_t *dims, size_t rank, rn_tensor **out)
{
    rn_remote_context *ctx = NULL;
    if (type != RN_STRING && rn_compiled_model_get_context(cm, &ctx) == RN_OK) {
        rn_status st = ctx->ops->alloc_host != NULL
                           ? rn_remote_context_create_host_tensor(ctx, type, dims, rank, out)
                           : RN_NOT_FOUND;
        rn_remote_context_free(ctx);
        if (st == RN_OK)
            return RN_OK;
    }
    rn_clear_error();
    return rn_tensor_create(type, dims, rank, out);
}

rn_status rn_compiled_model_create_infer_request(rn_compiled_model *cm, rn_infer_request **out)
{
    if (cm == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "create_infer_request: compiled and out must be set");
    rn_infer_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
    r->compiled = cm;
    r->inputs = calloc(cm->n_inputs + 1, sizeof *r->inputs);
    r->own_input = calloc(cm->n_inputs + 1, sizeof *r->own_input);
    r->outputs = calloc(cm->n_outputs + 1, sizeof *r->outputs);
    r->own_output = calloc(cm->n_outputs + 1, sizeof *r->own_output);
    r->user_output = calloc(cm->n_outputs + 1, sizeof *r->user_output);
    r->dense = calloc(cm->n_inputs + 1, sizeof *r->dense);
    r->dense_bytes = calloc(cm->n_inputs + 1, sizeof *r->dense_bytes);
    rn_status st = RN_OK;
    if (!r->inputs || !r->own_input || !r->outputs || !r->own_output || !r->user_output ||
        !r->dense || !r->dense_bytes) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
        goto fail;
    }
    if ((st = cm->ops->create_request(cm->compiled, r, &r->request)) != RN_OK)
        goto fail;
    /* Every input starts as a zero-filled tensor of the port's shape
     * (dynamic dims as 0); every output as an empty view until infer. */
    for (size_t i = 0; i < cm->n_inputs; i++) {
        const rn_port *p = &cm->inputs[i];
        int64_t dims[RN_MAX_RANK];
        int rank = p->shape.rank < 0 ? 0 : p->shape.rank;
        for (int d = 0; d < rank; d++)
            dims[d] = p->shape.dims[d] < 0 ? 0 : p->shape.dims[d];
        rn_element_type type = p->element_type == RN_UNDEFINED ? RN_F32 : p->element_type;
        if ((st = input_tensor(cm, type, dims, (size_t)rank, &r->inputs[i])) != RN_OK)
            goto fail;
        r->own_input[i] = true;
    }
    for (size_t i = 0; i < cm->n_outputs; i++) {
        rn_tensor *t = calloc(1, sizeof *t);
        if (t == NULL) {
            st = rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
            goto fail;
        }
        t->type = cm->outputs[i].element_type;
        r->outputs[i] = t;
        r->own_output[i] = true;
    }
    atomic_fetch_add(&cm->refs, 1);
    r->counted = true;
    *out = r;
    return RN_OK;
fail:
    rn_infer_request_free(r);
    return st;
}

/* Checks that a tensor fits a port: element type, rank and static dims.
 * Sequences and optionals without a value are checked for their element
 * type only (the port describes their tensors; the device checks that the
 * value is of the kind the model declares). */
static rn_status check_fits(const rn_port *p, const rn_tensor *t, const char *what)
{
    if (p->element_type != RN_UNDEFINED && t->type != p->element_type)
        return rn_set_error(RN_TYPE_MISMATCH, "%s '%s': expected element type %s, got %s", what,
                            p->name, rn_element_type_name(p->element_type),
                            rn_element_type_name(t->type));
    if (t->kind != RN_VALUE_TENSOR)
        return RN_OK;
    if (p->shape.rank >= 0) {
        if ((size_t)p->shape.rank != t->rank)
            return rn_set_error(RN_SHAPE_MISMATCH, "%s '%s': expected rank %d, got %zu", what,
                                p->name, p->shape.rank, t->rank);
        for (int d = 0; d < p->shape.rank; d++)
            if (p->shape.dims[d] >= 0 && p->shape.dims[d] != t->dims[d])
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "%s '%s': dim %d is %lld, the model expects %lld", what,
                                    p->name, d, (long long)t->dims[d], (long long)p->shape.dims[d]);
    }
    return RN_OK;
}

/* A remote tensor must live in the context the model runs in, and the
 * device must take remote tensors for `what` ports. */
static rn_status check_remote(const rn_compiled_model *cm, const rn_tensor *t, const rn_port *p,
                              const char *what, bool supported)
{
    const rn_remote_context *c = t->context;
    if (c->device != cm->device || c->core != cm->core)
        return rn_set_error(RN_INVALID_ARG,
                            "%s '%s': the remote tensor lives on device %s, the model runs on %s",
                            what, p->name, c->device->name, cm->device->name);
    if (!runtime_context_matches(cm, c))
        return rn_set_error(RN_INVALID_ARG,
                            "%s '%s': the remote tensor belongs to another %s context than the "
                            "one the model was compiled in",
                            what, p->name, cm->device->name);
    if (!supported)
        return rn_set_error(RN_NOT_IMPLEMENTED, "%s '%s': device %s takes no remote %ss", what,
                            p->name, cm->device->name, what);
    return RN_OK;
}

rn_status rn_infer_request_set_input_tensor(rn_infer_request *r, size_t index, rn_tensor *tensor)
{
    if (r == NULL || tensor == NULL)
        return rn_set_error(RN_INVALID_ARG, "set_input_tensor: request and tensor must be set");
    rn_compiled_model *cm = r->compiled;
    rn_status busy = check_idle(r, "set_tensor");
    if (busy != RN_OK)
        return busy;
    if (index >= cm->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "input index %zu is out of range (%zu inputs)", index,
                            cm->n_inputs);
    rn_status st = check_fits(&cm->inputs[index], tensor, "input");
    if (st == RN_OK && tensor->remote != NULL)
        st = check_remote(cm, tensor, &cm->inputs[index], "input",
                          cm->ops->request_ops->set_remote_input != NULL);
    if (st != RN_OK)
        return st;
    if (r->own_input[index])
        rn_tensor_free(r->inputs[index]);
    r->inputs[index] = tensor;
    r->own_input[index] = false;
    return RN_OK;
}

rn_status rn_infer_request_set_output_tensor(rn_infer_request *r, size_t index, rn_tensor *tensor)
{
    if (r == NULL || tensor == NULL)
        return rn_set_error(RN_INVALID_ARG, "set_output_tensor: request and tensor must be set");
    rn_compiled_model *cm = r->compiled;
    rn_status busy = check_idle(r, "set_tensor");
    if (busy != RN_OK)
        return busy;
    if (index >= cm->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%zu outputs)", index,
                            cm->n_outputs);
    if (tensor->kind != RN_VALUE_TENSOR || tensor->type == RN_STRING)
        return rn_set_error(RN_INVALID_ARG,
                            "output %zu: only numeric tensors can receive results in place "
                            "(sequences, optionals and strings are read with get_tensor)",
                            index);
    rn_status st = check_fits(&cm->outputs[index], tensor, "output");
    if (st != RN_OK)
        return st;
    const rn_request_ops *ops = cm->ops->request_ops;
    if (tensor->remote != NULL) {
        st =
            check_remote(cm, tensor, &cm->outputs[index], "output", ops->set_remote_output != NULL);
        if (st == RN_OK)
            st = ops->set_remote_output(r->request, index, tensor->remote);
        if (st != RN_OK)
            return st;
    } else {
        if (ops->set_output == NULL)
            return rn_set_error(RN_NOT_IMPLEMENTED, "device %s cannot write into caller's outputs",
                                rn_compiled_model_device(cm));
        graph_tensor view;
        runtime_tensor_view(tensor, &view);
        if ((st = ops->set_output(r->request, index, &view)) != RN_OK)
            return st;
    }
    if (r->own_output[index])
        rn_tensor_free(r->outputs[index]);
    r->outputs[index] = tensor;
    r->own_output[index] = false;
    r->user_output[index] = true;
    return RN_OK;
}

/* Finds `name` among inputs (is_input = 1) then outputs (0); -1 if absent. */
static long find_port(const rn_compiled_model *cm, const char *name, int *is_input)
{
    for (size_t i = 0; i < cm->n_inputs; i++)
        if (strcmp(cm->inputs[i].name, name) == 0) {
            *is_input = 1;
            return (long)i;
        }
    for (size_t i = 0; i < cm->n_outputs; i++)
        if (strcmp(cm->outputs[i].name, name) == 0) {
            *is_input = 0;
            return (long)i;
        }
    return -1;
}

rn_status rn_infer_request_set_tensor(rn_infer_request *r, const char *name, rn_tensor *tensor)
{
    if (r == NULL || name == NULL)
        return rn_set_error(RN_INVALID_ARG, "set_tensor: request and name must be set");
    int is_input;
    long i = find_port(r->compiled, name, &is_input);
    if (i < 0)
        return rn_set_error(RN_NOT_FOUND, "no input or output is called '%s'", name);
    return is_input ? rn_infer_request_set_input_tensor(r, (size_t)i, tensor)
                    : rn_infer_request_set_output_tensor(r, (size_t)i, tensor);
}

rn_status rn_infer_request_get_input_tensor(rn_infer_request *r, size_t index, rn_tensor **out)
{
    if (r == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_input_tensor: request and out must be set");
    rn_status busy = check_idle(r, "get_tensor");
    if (busy != RN_OK)
        return busy;
    if (index >= r->compiled->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "input index %zu is out of range (%zu inputs)", index,
                            r->compiled->n_inputs);
    *out = r->inputs[index];
    return RN_OK;
}

rn_status rn_infer_request_get_output_tensor(rn_infer_request *r, size_t index, rn_tensor **out)
{
    if (r == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_output_tensor: request and out must be set");
    rn_status busy = check_idle(r, "get_tensor");
    if (busy != RN_OK)
        return busy;
    if (index >= r->compiled->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%zu outputs)", index,
                            r->compiled->n_outputs);
    if (!r->user_output[index] && r->ran) {
        graph_tensor view;
        const rn_request_ops *ops = r->compiled->ops->request_ops;
        rn_status st = ops->get_output(r->request, index, &view);
        if (st != RN_OK)
            return st;
        if ((st = runtime_tensor_rebind(r->outputs[index], &view)) != RN_OK)
            return st;
    }
    *out = r->outputs[index];
    return RN_OK;
}

rn_status rn_infer_request_get_tensor(rn_infer_request *r, const char *name, rn_tensor **out)
{
    if (r == NULL || name == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_tensor: request and name must be set");
    int is_input;
    long i = find_port(r->compiled, name, &is_input);
    if (i < 0)
        return rn_set_error(RN_NOT_FOUND, "no input or output is called '%s'", name);
    return is_input ? rn_infer_request_get_input_tensor(r, (size_t)i, out)
                    : rn_infer_request_get_output_tensor(r, (size_t)i, out);
}

rn_status rn_infer_request_infer(rn_infer_request *r)
{
    if (r == NULL)
        return rn_set_error(RN_INVALID_ARG, "infer: request is NULL");
    const rn_request_ops *ops = r->compiled->ops->request_ops;
    rn_status st = check_idle(r, "infer");
    if (st == RN_OK)
        st = bind_inputs(r);
    if (st != RN_OK)
        return st;
    r->ran = true;
    return ops->infer(r->request);
}

/* Hands every input's buffer to the device request. */
static rn_status bind_inputs(rn_infer_request *r)
{
    rn_compiled_model *cm = r->compiled;
    const rn_request_ops *ops = cm->ops->request_ops;
    for (size_t i = 0; i < cm->n_inputs; i++) {
        const rn_tensor *t = r->inputs[i];
        if (t->remote != NULL) {
            rn_status st = ops->set_remote_input(r->request, i, t->remote);
            if (st != RN_OK)
                return st;
            continue;
        }
        graph_tensor view;
        runtime_tensor_view(t, &view);
        if (t->strided) {
            /* A region of interest: densify it into the request's buffer. */
            if (r->dense_bytes[i] < t->bytes) {
                void *p = realloc(r->dense[i], t->bytes);
                if (p == NULL)
                    return rn_set_error(RN_OUT_OF_MEMORY, "input %zu: cannot densify %zu bytes", i,
                                        t->bytes);
                r->dense[i] = p;
                r->dense_bytes[i] = t->bytes;
            }
            runtime_tensor_densify(t, r->dense[i]);
            view.data = r->dense[i];
        }
        rn_status st = ops->set_input(r->request, i, &view);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

static rn_status no_async(const rn_infer_request *r)
{
    return rn_set_error(RN_NOT_IMPLEMENTED, "device %s has no async infer requests",
                        rn_compiled_model_device(r->compiled));
}

rn_status rn_infer_request_start_async(rn_infer_request *r)
{
    if (r == NULL)
        return rn_set_error(RN_INVALID_ARG, "start_async: request is NULL");
    const rn_request_ops *ops = r->compiled->ops->request_ops;
    if (ops->start_async == NULL)
        return no_async(r);
    rn_status st = check_idle(r, "start_async");
    if (st == RN_OK)
        st = bind_inputs(r);
    if (st == RN_OK) {
        r->ran = true; /* before the run starts: its callback may restart it */
        st = ops->start_async(r->request);
    }
    return st;
}

rn_status rn_infer_request_wait(rn_infer_request *r)
{
    if (r == NULL)
        return rn_set_error(RN_INVALID_ARG, "wait: request is NULL");
    const rn_request_ops *ops = r->compiled->ops->request_ops;
    if (ops->wait == NULL)
        return no_async(r);
    return ops->wait(r->request);
}

rn_status rn_infer_request_wait_for(rn_infer_request *r, int64_t timeout_ms)
{
    if (r == NULL)
        return rn_set_error(RN_INVALID_ARG, "wait_for: request is NULL");
    const rn_request_ops *ops = r->compiled->ops->request_ops;
    if (ops->wait_for == NULL)
        return no_async(r);
    return ops->wait_for(r->request, timeout_ms);
}

rn_status rn_infer_request_cancel(rn_infer_request *r)
{
    if (r == NULL)
        return rn_set_error(RN_INVALID_ARG, "cancel: request is NULL");
    const rn_request_ops *ops = r->compiled->ops->request_ops;
    if (ops->cancel == NULL)
        return no_async(r);
    return ops->cancel(r->request);
}

rn_status rn_infer_request_set_callback(rn_infer_request *r, rn_infer_callback fn, void *user_data)
{
    if (r == NULL)
        return rn_set_error(RN_INVALID_ARG, "set_callback: request is NULL");
    const rn_request_ops *ops = r->compiled->ops->request_ops;
    if (ops->set_callback == NULL)
        return no_async(r);
    /* The device's request calls fn with this handle (its owner): one
     * request object, one callback. */
    return ops->set_callback(r->request, fn, user_data);
}

rn_status rn_infer_request_profiling_info(rn_infer_request *r, const rn_profiling_info **info,
                                          size_t *count)
{
    if (r == NULL || info == NULL || count == NULL)
        return rn_set_error(RN_INVALID_ARG, "profiling_info: request, info and count must be set");
    const rn_request_ops *ops = r->compiled->ops->request_ops;
    rn_status busy = check_idle(r, "profiling_info");
    if (busy != RN_OK)
        return busy;
    if (ops->profiling == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s reports no profiling",
                            rn_compiled_model_device(r->compiled));
    return ops->profiling(r->request, info, count);
}
