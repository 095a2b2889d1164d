"""The cffi (API mode) build of runnel's C API: the extension runnel._capi.

API mode: the declarations below are compiled against the real headers in
include/runnel/, so the C compiler checks every one of them (a declaration
that no longer matches the header is a build error, not a crash at run
time), struct layouts come from the compiler (the `...;` members), and every
call releases the GIL while it runs. Measured against ctypes in
docs/python.md ("Why cffi").

The extension links libruntime.so, which the build finds next to the
package's sources (python/runnel/libruntime.so, copied there by
python/build-wheel or python/dev-install) and loads through an rpath of
$ORIGIN.
"""
import os

from cffi import FFI

here = os.path.dirname(os.path.abspath(__file__))
include = os.environ.get("RUNNEL_INCLUDE", os.path.join(here, "..", "include"))
libdir = os.path.join(here, "runnel")

# What rnpy_output reports of an output (declared for cffi and defined for the
# compiler from this one text).
TENSOR_INFO = r"""
typedef struct rnpy_tensor_info {
    uintptr_t data;
    size_t rank;
    int64_t dims[8];
    int element_type;
    int dense;
} rnpy_tensor_info;
"""

CDEF = TENSOR_INFO + r"""
typedef int... rn_status;
typedef int... rn_element_type;
typedef int... rn_value_kind;
typedef int... rn_port_kind;
typedef int... rn_node_status;

typedef struct rn_core rn_core;
typedef struct rn_model rn_model;
typedef struct rn_compiled_model rn_compiled_model;
typedef struct rn_infer_request rn_infer_request;
typedef struct rn_tensor rn_tensor;

#define RN_MAX_RANK ...

typedef struct rn_property { const char *key; const char *value; } rn_property;
typedef struct rn_partial_shape { int rank; int64_t dims[...]; ...; } rn_partial_shape;
typedef struct rn_port {
    const char *name;
    rn_element_type element_type;
    rn_partial_shape shape;
    rn_port_kind kind;
    ...;
} rn_port;
typedef struct rn_profiling_info {
    const char *node_name;
    const char *node_type;
    const char *exec_type;
    rn_node_status status;
    uint64_t real_time_us;
    ...;
} rn_profiling_info;

const char *rn_status_name(rn_status status);
const char *rn_status_message(rn_status status);
#define RN_VERSION_MAJOR ...
#define RN_VERSION_MINOR ...
#define RN_VERSION_PATCH ...
const char *rn_last_error(void);
void rn_clear_error(void);

size_t rn_element_type_size(rn_element_type type);
const char *rn_element_type_name(rn_element_type type);
int rn_element_type_is_valid(rn_element_type type);

rn_status rn_tensor_create(rn_element_type type, const int64_t *dims, size_t rank, rn_tensor **out);
rn_status rn_tensor_wrap(rn_element_type type, const int64_t *dims, size_t rank, void *data,
                         size_t byte_size, rn_tensor **out);
rn_status rn_tensor_wrap_strided(rn_element_type type, const int64_t *dims, size_t rank,
                                 const int64_t *strides, void *data, rn_tensor **out);
const int64_t *rn_tensor_strides(const rn_tensor *tensor);
int rn_tensor_is_dense(const rn_tensor *tensor);
void rn_tensor_free(rn_tensor *tensor);
rn_value_kind rn_tensor_kind(const rn_tensor *tensor);
const char *rn_tensor_get_string(const rn_tensor *tensor, size_t index);
size_t rn_tensor_sequence_length(const rn_tensor *tensor);
rn_status rn_tensor_sequence_item(const rn_tensor *tensor, size_t index, rn_tensor **item);
size_t rn_tensor_map_size(const rn_tensor *tensor);
rn_element_type rn_tensor_map_key_type(const rn_tensor *tensor);
rn_status rn_tensor_map_keys(const rn_tensor *tensor, rn_tensor **keys);
rn_status rn_tensor_map_values(const rn_tensor *tensor, rn_tensor **values);
rn_element_type rn_tensor_element_type(const rn_tensor *tensor);
size_t rn_tensor_rank(const rn_tensor *tensor);
const int64_t *rn_tensor_dims(const rn_tensor *tensor);
size_t rn_tensor_element_count(const rn_tensor *tensor);
size_t rn_tensor_byte_size(const rn_tensor *tensor);
void *rn_tensor_data(const rn_tensor *tensor);

rn_status rn_core_create(rn_core **out);
void rn_core_free(rn_core *core);
size_t rn_core_device_count(const rn_core *core);
const char *rn_core_device_name(const rn_core *core, size_t index);
rn_status rn_core_set_property(rn_core *core, const char *device, const rn_property *properties,
                               size_t n_properties);
rn_status rn_core_get_property(const rn_core *core, const char *device, const char *key, char *buf,
                               size_t size);
rn_status rn_core_import_model(rn_core *core, const void *data, size_t size, const char *device,
                               const rn_property *properties, size_t n_properties,
                               rn_compiled_model **out);
rn_status rn_core_load_plugin(rn_core *core, const char *name, const char *path);
rn_status rn_core_add_extension(rn_core *core, const char *path);
rn_status rn_core_get_version(const rn_core *core, const char *device, const char **version);
size_t rn_core_failed_device_count(const rn_core *core);
rn_status rn_core_failed_device(const rn_core *core, size_t index, const char **name,
                                const char **reason);
rn_status rn_core_read_model(rn_core *core, const char *path, rn_model **out);
rn_status rn_core_compile_model(rn_core *core, const rn_model *model, const char *device,
                                const rn_property *properties, size_t n_properties,
                                rn_compiled_model **out);

void rn_model_free(rn_model *model);
const char *rn_model_name(const rn_model *model);
size_t rn_model_input_count(const rn_model *model);
size_t rn_model_output_count(const rn_model *model);
rn_status rn_model_input(const rn_model *model, size_t index, rn_port *out);
rn_status rn_model_output(const rn_model *model, size_t index, rn_port *out);
rn_status rn_model_reshape(rn_model *model, const char *name, const rn_partial_shape *shape);

void rn_compiled_model_free(rn_compiled_model *compiled);
const char *rn_compiled_model_device(const rn_compiled_model *compiled);
size_t rn_compiled_model_input_count(const rn_compiled_model *compiled);
size_t rn_compiled_model_output_count(const rn_compiled_model *compiled);
rn_status rn_compiled_model_input(const rn_compiled_model *compiled, size_t index, rn_port *out);
rn_status rn_compiled_model_output(const rn_compiled_model *compiled, size_t index, rn_port *out);
rn_status rn_compiled_model_get_property(const rn_compiled_model *compiled, const char *key,
                                         char *buf, size_t size);
rn_status rn_compiled_model_set_property(rn_compiled_model *compiled,
                                         const rn_property *properties, size_t n_properties);
rn_status rn_compiled_model_export(const rn_compiled_model *compiled, void **data, size_t *size);
rn_status rn_compiled_model_create_infer_request(rn_compiled_model *compiled,
                                                 rn_infer_request **out);

void rn_infer_request_free(rn_infer_request *request);
rn_status rn_infer_request_set_tensor(rn_infer_request *request, const char *name,
                                      rn_tensor *tensor);
rn_status rn_infer_request_set_input_tensor(rn_infer_request *request, size_t index,
                                            rn_tensor *tensor);
rn_status rn_infer_request_set_output_tensor(rn_infer_request *request, size_t index,
                                             rn_tensor *tensor);
rn_status rn_infer_request_get_tensor(rn_infer_request *request, const char *name,
                                      rn_tensor **out);
rn_status rn_infer_request_get_input_tensor(rn_infer_request *request, size_t index,
                                            rn_tensor **out);
rn_status rn_infer_request_get_output_tensor(rn_infer_request *request, size_t index,
                                             rn_tensor **out);
rn_status rn_infer_request_infer(rn_infer_request *request);
rn_status rn_infer_request_start_async(rn_infer_request *request);
rn_status rn_infer_request_wait(rn_infer_request *request);
rn_status rn_infer_request_wait_for(rn_infer_request *request, int64_t timeout_ms);
rn_status rn_infer_request_cancel(rn_infer_request *request);
rn_status rn_infer_request_profiling_info(rn_infer_request *request,
                                          const rn_profiling_info **info, size_t *count);

void free(void *);

/* Written here, below: completion callbacks into Python. */
rn_status rnpy_set_callback(rn_infer_request *request, void *handle);
rn_status rnpy_clear_callback(rn_infer_request *request);
void rnpy_close(void);
int rnpy_in_callback(void);
rn_status rnpy_output(rn_infer_request *request, size_t index, rnpy_tensor_info *info);
extern "Python" void rnpy_on_done(void *handle, rn_infer_request *request, rn_status status,
                                  const char *message);
"""

# Completions reach Python through one C function. It runs on runnel's
# callback thread; cffi's extern "Python" takes the GIL there. Once
# rnpy_close() has run (the package's atexit handler, after every request
# was waited for), a completion no longer enters the interpreter, which
# may be finalizing. The message of a failed run is read on the callback
# thread, where rn_last_error() holds it, and handed over with the status.
SOURCE = r"""
#include <stdlib.h>
#include <string.h>
#include "runnel/runnel.h"
""" + TENSOR_INFO + r"""

static int rnpy_closing;
/* Set while this thread runs a completion into Python: whatever Python runs
 * then (the callback, or a garbage collection that frees a request) is on
 * runnel's callback thread, where waiting for a request could wait for
 * itself. */
static _Thread_local int rnpy_callback_depth;
static void rnpy_on_done(void *handle, rn_infer_request *request, rn_status status,
                         const char *message);

static void rnpy_trampoline(rn_infer_request *request, rn_status status, void *user_data)
{
    if (__atomic_load_n(&rnpy_closing, __ATOMIC_ACQUIRE))
        return;
    rnpy_callback_depth++;
    rnpy_on_done(user_data, request, status, status == RN_OK ? "" : rn_last_error());
    rnpy_callback_depth--;
}

static int rnpy_in_callback(void)
{
    return rnpy_callback_depth > 0;
}

static rn_status rnpy_set_callback(rn_infer_request *request, void *handle)
{
    return rn_infer_request_set_callback(request, rnpy_trampoline, handle);
}

static rn_status rnpy_clear_callback(rn_infer_request *request)
{
    return rn_infer_request_set_callback(request, NULL, NULL);
}

static void rnpy_close(void)
{
    __atomic_store_n(&rnpy_closing, 1, __ATOMIC_RELEASE);
}

/* What Python needs to view output `index` as a numpy array, in one call:
 * results are read after every infer, so this is on the per-call path.
 * rnpy_tensor_info is defined above, from TENSOR_INFO. */
_Static_assert(RN_MAX_RANK == 8, "rnpy_tensor_info.dims holds RN_MAX_RANK dims");

static rn_status rnpy_output(rn_infer_request *request, size_t index, rnpy_tensor_info *info)
{
    rn_tensor *t;
    rn_status st = rn_infer_request_get_output_tensor(request, index, &t);
    if (st != RN_OK)
        return st;
    /* A map or a sequence of maps (ZipMap's output): element_type -1 says
     * so, and Python walks it (runnel/_tensor.py, python_value). */
    rn_tensor *first = NULL;
    if (rn_tensor_kind(t) == RN_VALUE_MAP ||
        (rn_tensor_kind(t) == RN_VALUE_SEQUENCE &&
         (rn_tensor_sequence_length(t) == 0 ||
          (rn_tensor_sequence_item(t, 0, &first) == RN_OK &&
           rn_tensor_kind(first) == RN_VALUE_MAP)))) {
        info->data = (uintptr_t)t;
        info->rank = 0;
        info->element_type = -1;
        info->dense = 1;
        return RN_OK;
    }
    if (rn_tensor_kind(t) != RN_VALUE_TENSOR || rn_tensor_element_type(t) == RN_STRING)
        return rn_set_error(RN_NOT_IMPLEMENTED,
                            "output %zu: string, sequence of tensors and optional values are "
                            "not supported by the Python package", index);
    info->data = (uintptr_t)rn_tensor_data(t);
    info->rank = rn_tensor_rank(t);
    memcpy(info->dims, rn_tensor_dims(t), info->rank * sizeof info->dims[0]);
    info->element_type = (int)rn_tensor_element_type(t);
    info->dense = rn_tensor_is_dense(t);
    return RN_OK;
}
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "runnel._capi",
    SOURCE,
    include_dirs=[include],
    library_dirs=[libdir],
    libraries=[":libruntime.so"],
    extra_link_args=["-Wl,-rpath,$ORIGIN"],
    extra_compile_args=["-std=gnu17", "-Wall", "-Werror"],
)

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=os.path.join(here, "build", "cffi"), verbose=False)
