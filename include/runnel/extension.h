/* Extensions: shared objects that add custom ops (a schema with shape
 * inference) and their kernels for one or more devices.
 *
 * An extension exports one symbol, rn_extension_entry, returning an
 * rn_extension. It builds against the installed headers only: schemas and
 * kernels are runnel/kernel.h's. Extensions are never unloaded: their
 * schemas become part of the process's op table. */
#ifndef RUNNEL_EXTENSION_H
#define RUNNEL_EXTENSION_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/api.h"
#include "runnel/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: schemas and kernels from runnel/kernel.h, kernel lists versioned.
 * 3: attribute specs carry their defaults (rn_attr_spec.dflt). */
#define RN_EXTENSION_ABI_VERSION 3

/* The kernels an extension provides for one device (NULL-terminated list). */
typedef struct rn_extension_kernels {
    const char *device;
    rn_kernel_list kernels;
} rn_extension_kernels;

typedef struct rn_extension {
    uint32_t abi_version;
    const char *name;
    /* The ops it defines, NULL-terminated. */
    const rn_op_schema *const *ops;
    size_t n_devices;
    const rn_extension_kernels *devices;
} rn_extension;

/* The one symbol an extension shared object exports, defined by the
 * extension; this declaration (RN_API) exports the definition from an
 * extension built with hidden visibility. */
RN_API const rn_extension *rn_extension_entry(uint32_t abi_version);
typedef const rn_extension *(*rn_extension_entry_fn)(uint32_t abi_version);
#define RN_EXTENSION_ENTRY_NAME "rn_extension_entry"

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_EXTENSION_H */
