/* rn_status names and the per-thread last-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runnel/status.h"

#define RN_ERROR_CAPACITY 2048

static _Thread_local char last_error[RN_ERROR_CAPACITY];

const char *rn_status_name(rn_status status)
{
    switch (status) {
#define RN_STATUS_NAME_(name, value, message)                                                      \
    case RN_##name:                                                                                \
        return #name;
        RN_STATUS_MAP(RN_STATUS_NAME_)
#undef RN_STATUS_NAME_
    }
    return "UNKNOWN";
}

const char *rn_status_message(rn_status status)
{
    switch (status) {
#define RN_STATUS_MESSAGE_(name, value, message)                                                   \
    case RN_##name:                                                                                \
        return message;
        RN_STATUS_MAP(RN_STATUS_MESSAGE_)
#undef RN_STATUS_MESSAGE_
    }
    return "unknown status";
}

const char *rn_last_error(void)
{
    return last_error;
}

void rn_clear_error(void)
{
    last_error[0] = '\0';
}

rn_status rn_set_error(rn_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

rn_status rn_wrap_error(rn_status status, const char *fmt, ...)
{
    char prefix[512];
    char detail[RN_ERROR_CAPACITY];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(detail, last_error, sizeof detail);
    size_t n = strlen(prefix);
    memcpy(last_error, prefix, n);
    size_t room = sizeof last_error - n - 1;
    size_t m = strnlen(detail, room);
    memcpy(last_error + n, detail, m);
    last_error[n + m] = '\0';
    return status;
}
