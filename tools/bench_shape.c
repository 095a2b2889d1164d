/* Parsing and printing the shapes of -shape and -data_shape. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench_shape.h"

/* Parses the dims between '[' and ']' (exclusive: [begin, end)). */
static rn_status parse_dims(const char *flag, const char *text, const char *begin, const char *end,
                            rn_partial_shape *shape)
{
    shape->rank = 0;
    const char *p = begin;
    while (p < end && *p == ' ')
        p++;
    if (p == end)
        return RN_OK; /* [] is a scalar */
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        char dim[32];
        size_t len = (size_t)(stop - p);
        while (len > 0 && p[0] == ' ') {
            p++;
            len--;
        }
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (len == 0 || len >= sizeof dim)
            return rn_set_error(RN_INVALID_ARG, "%s '%s': empty or overlong dim", flag, text);
        memcpy(dim, p, len);
        dim[len] = '\0';
        if (shape->rank == RN_MAX_RANK)
            return rn_set_error(RN_INVALID_ARG, "%s '%s': more than %d dims", flag, text,
                                RN_MAX_RANK);
        int64_t value;
        if (strcmp(dim, "?") == 0 || strcmp(dim, "-1") == 0) {
            value = RN_DIM_DYNAMIC;
        } else if (strstr(dim, "..") != NULL) {
            return rn_set_error(RN_INVALID_ARG,
                                "%s '%s': dim range '%s' is not supported (use ? for a dynamic "
                                "dim)",
                                flag, text, dim);
        } else {
            char *tail;
            errno = 0;
            long long v = strtoll(dim, &tail, 10);
            if (*tail != '\0' || errno != 0 || v < 0)
                return rn_set_error(RN_INVALID_ARG,
                                    "%s '%s': bad dim '%s' (a whole number >= 0, ? or -1)", flag,
                                    text, dim);
            value = (int64_t)v;
        }
        shape->dims[shape->rank++] = value;
        if (comma == NULL)
            return RN_OK;
        p = comma + 1;
    }
}

rn_status bench_shape_parse(const char *flag, const char *text, bench_shape_list *out)
{
    out->n = 0;
    const char *p = text;
    if (*p == '\0')
        return rn_set_error(RN_INVALID_ARG, "%s: empty shape", flag);
    while (*p != '\0') {
        const char *open = strchr(p, '[');
        if (open == NULL)
            return rn_set_error(RN_INVALID_ARG, "%s '%s': expected NAME[d0,d1,...] or [d0,d1,...]",
                                flag, text);
        const char *close = strchr(open, ']');
        if (close == NULL)
            return rn_set_error(RN_INVALID_ARG, "%s '%s': missing ']'", flag, text);
        if (out->n == BENCH_SHAPE_MAX) {
            out->n = 0;
            return rn_set_error(RN_INVALID_ARG, "%s: more than %d shapes", flag, BENCH_SHAPE_MAX);
        }
        bench_shape_entry *e = &out->entries[out->n];
        size_t name_len = (size_t)(open - p);
        if (name_len >= sizeof e->name) {
            out->n = 0;
            return rn_set_error(RN_INVALID_ARG, "%s: input name too long", flag);
        }
        memcpy(e->name, p, name_len);
        e->name[name_len] = '\0';
        for (size_t k = 0; k < out->n; k++)
            if (strcmp(out->entries[k].name, e->name) == 0) {
                out->n = 0;
                return rn_set_error(RN_INVALID_ARG, "%s '%s': input '%s' is given twice", flag,
                                    text, e->name);
            }
        rn_status st = parse_dims(flag, text, open + 1, close, &e->shape);
        if (st != RN_OK) {
            out->n = 0;
            return st;
        }
        out->n++;
        p = close + 1;
        if (*p == ',')
            p++;
        else if (*p != '\0') {
            out->n = 0;
            return rn_set_error(RN_INVALID_ARG, "%s '%s': expected ',' after ']'", flag, text);
        }
    }
    return RN_OK;
}

const rn_partial_shape *bench_shape_find(const bench_shape_list *list, const char *name)
{
    const rn_partial_shape *any = NULL;
    for (size_t i = 0; i < list->n; i++) {
        if (strcmp(list->entries[i].name, name) == 0)
            return &list->entries[i].shape;
        if (list->entries[i].name[0] == '\0')
            any = &list->entries[i].shape;
    }
    return any;
}

const char *bench_shape_unknown_name(const bench_shape_list *list, const char *const *names,
                                     size_t n)
{
    for (size_t i = 0; i < list->n; i++) {
        const char *e = list->entries[i].name;
        if (e[0] == '\0')
            continue;
        size_t k = 0;
        while (k < n && strcmp(names[k], e) != 0)
            k++;
        if (k == n)
            return e;
    }
    return NULL;
}

void bench_shape_format(const rn_partial_shape *shape, char *buf, size_t size)
{
    if (size == 0)
        return;
    if (shape->rank < 0) {
        snprintf(buf, size, "[...]");
        return;
    }
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < shape->rank && used < size; d++) {
        if (shape->dims[d] < 0)
            used += (size_t)snprintf(buf + used, size - used, "%s?", d ? "," : "");
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? "," : "",
                                     (long long)shape->dims[d]);
    }
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

int bench_shape_is_static(const rn_partial_shape *shape)
{
    if (shape->rank < 0)
        return 0;
    for (int d = 0; d < shape->rank; d++)
        if (shape->dims[d] < 0)
            return 0;
    return 1;
}
