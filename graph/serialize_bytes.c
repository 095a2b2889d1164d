/* The fields every serialized layout is made of (docs/export.md): writing
 * them into a sink that counts, copies or hashes, and reading them back with
 * every length checked against the bytes that remain. */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize_internal.h"

void graph_buffer_release(graph_buffer *b)
{
    if (b == NULL)
        return;
    free(b->data);
    b->data = NULL;
    b->size = 0;
}

/* ---- writing ---- */

void serial_put(serial_sink *s, const void *p, size_t n)
{
    if (s->st != RN_OK || n == 0)
        return;
    if (s->data != NULL) {
        if (n > s->cap - s->size) {
            s->st = rn_set_error(RN_INTERNAL, "graph encoding: the write pass outgrew the count");
            return;
        }
        memcpy(s->data + s->size, p, n);
    }
    /* XXH64_update fails only for a NULL input, and p is never NULL here. */
    if (s->hash != NULL)
        (void)XXH64_update(s->hash, p, n);
    s->size += n;
}

void serial_put_str(serial_sink *s, const char *str)
{
    size_t n = str != NULL ? strlen(str) : 0;
    if (n > UINT32_MAX) {
        if (s->st == RN_OK)
            s->st = rn_set_error(RN_INVALID_ARG, "graph encoding: a string of %zu bytes", n);
        return;
    }
    serial_put_u32(s, (uint32_t)n);
    serial_put(s, str, n);
}

/* ---- reading ---- */

rn_status serial_fail_at(serial_reader *r, size_t at, rn_status st, const char *fmt, ...)
{
    if (r->st != RN_OK)
        return r->st;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->st = rn_set_error(st, "%s: %s (at byte %zu)", r->what, msg, r->base + at);
    return r->st;
}

const uint8_t *serial_take(serial_reader *r, size_t n, const char *field)
{
    if (r->st != RN_OK)
        return NULL;
    if (n > serial_remaining(r)) {
        serial_fail(r, "truncated: %s needs %zu bytes, %zu remain", field, n, serial_remaining(r));
        return NULL;
    }
    const uint8_t *p = r->data + r->pos;
    r->pos += n;
    return p;
}

uint8_t serial_get_u8(serial_reader *r, const char *field)
{
    const uint8_t *p = serial_take(r, 1, field);
    return p != NULL ? *p : 0;
}

uint32_t serial_get_u32(serial_reader *r, const char *field)
{
    const uint8_t *p = serial_take(r, 4, field);
    return p != NULL ? serial_load32(p) : 0;
}

bool serial_get_flag(serial_reader *r, const char *field)
{
    size_t at = r->pos;
    uint8_t f = serial_get_u8(r, field);
    if (f > 1)
        serial_fail_at(r, at, RN_PARSE_ERROR, "%s is %u, not 0 or 1", field, f);
    return r->st == RN_OK && f == 1;
}

uint64_t serial_get_u64(serial_reader *r, const char *field)
{
    const uint8_t *p = serial_take(r, 8, field);
    return p != NULL ? serial_load64(p) : 0;
}

int serial_get_count(serial_reader *r, const char *field, size_t min_bytes)
{
    size_t at = r->pos;
    uint32_t n = serial_get_u32(r, field);
    if (r->st != RN_OK)
        return 0;
    if (n > INT_MAX || (uint64_t)n * min_bytes > serial_remaining(r)) {
        serial_fail_at(r, at, RN_PARSE_ERROR, "%s %" PRIu32 " exceeds the %zu bytes that remain",
                       field, n, serial_remaining(r));
        return 0;
    }
    return (int)n;
}

char *serial_get_str(serial_reader *r, const char *field)
{
    size_t at = r->pos;
    uint32_t n = serial_get_u32(r, field);
    if (r->st == RN_OK && n > serial_remaining(r))
        serial_fail_at(r, at, RN_PARSE_ERROR, "truncated: %s of %" PRIu32 " bytes, %zu remain",
                       field, n, serial_remaining(r));
    const uint8_t *p = serial_take(r, n, field);
    if (p == NULL)
        return NULL;
    if (memchr(p, 0, n) != NULL) {
        serial_fail_at(r, at, RN_PARSE_ERROR, "%s contains a NUL byte", field);
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (s == NULL) {
        serial_fail_at(r, at, RN_OUT_OF_MEMORY, "out of memory for %s", field);
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}
