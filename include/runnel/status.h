/* Status codes and the per-thread error message.
 *
 * Every fallible call in runnel returns an rn_status. RN_OK is zero; every
 * error is a small negative integer. The detail of the last error (which file,
 * which node, which key, which shape) is kept per thread and read with
 * rn_last_error(). */
#ifndef RUNNEL_STATUS_H
#define RUNNEL_STATUS_H

#include "runnel/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, generic message): the one table that generates the enum,
 * rn_status_name() and rn_status_message(). */
#define RN_STATUS_MAP(X)                                                                           \
    X(OK, 0, "success")                                                                            \
    X(INVALID_ARG, -1, "invalid argument")                                                         \
    X(NOT_FOUND, -2, "not found")                                                                  \
    X(NOT_IMPLEMENTED, -3, "not implemented")                                                      \
    X(UNSUPPORTED, -4, "not supported by the device")                                              \
    X(PARSE_ERROR, -5, "malformed model")                                                          \
    X(IO_ERROR, -6, "input/output error")                                                          \
    X(OUT_OF_MEMORY, -7, "out of memory")                                                          \
    X(SHAPE_MISMATCH, -8, "shape mismatch")                                                        \
    X(TYPE_MISMATCH, -9, "element type mismatch")                                                  \
    X(REQUEST_BUSY, -10, "infer request is busy")                                                  \
    X(RESULT_NOT_READY, -11, "result not ready")                                                   \
    X(CANCELLED, -12, "cancelled")                                                                 \
    X(INFER_NOT_STARTED, -13, "inference not started")                                             \
    X(DEVICE_ERROR, -14, "device error")                                                           \
    X(INTERNAL, -15, "internal error")

typedef enum rn_status {
#define RN_STATUS_ENUM_(name, value, message) RN_##name = value,
    RN_STATUS_MAP(RN_STATUS_ENUM_)
#undef RN_STATUS_ENUM_
} rn_status;

/* "OK", "INVALID_ARG", ...; "UNKNOWN" for a value outside the table. Static string. */
RN_API const char *rn_status_name(rn_status status);

/* The generic message of a status ("invalid argument"). Static string. */
RN_API const char *rn_status_message(rn_status status);

/* The detail of the last error set on this thread ("" when none). The string
 * is owned by the thread and valid until the next runnel call on it. */
RN_API const char *rn_last_error(void);

/* Records a formatted message as this thread's last error and returns
 * `status`, so that `return rn_set_error(RN_INVALID_ARG, "...", ...);` reads
 * naturally. Plugins and extensions use it too. */
RN_API rn_status rn_set_error(rn_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefixes the current last error with a formatted context ("node 'conv1': ")
 * and returns `status`. Used while an error travels up through layers. */
RN_API rn_status rn_wrap_error(rn_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears this thread's last error. */
RN_API void rn_clear_error(void);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_STATUS_H */
