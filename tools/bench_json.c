/* The streaming JSON writer of the tools' reports. */
#include <math.h>

#include "tools/bench_json.h"

void bench_json_init(bench_json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->has_items[0] = false;
}

void bench_json_write_escaped(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            /* Other control characters are escaped; bytes >= 0x80 pass
             * through (the strings are UTF-8). "</" is split so that the
             * same text can sit inside an HTML <script> element. */
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else if (*p == '/' && p != (const unsigned char *)s && p[-1] == '<')
                fputs("\\/", f);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* The separator, the indentation and the key of the next item. */
static void item(bench_json *j, const char *key)
{
    if (j->depth > 0) {
        fputs(j->has_items[j->depth] ? ",\n" : "\n", j->f);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->f);
    }
    j->has_items[j->depth] = true;
    if (key != NULL) {
        bench_json_write_escaped(j->f, key);
        fputs(": ", j->f);
    }
}

static void begin_container(bench_json *j, const char *key, char c)
{
    item(j, key);
    fputc(c, j->f);
    if (j->depth + 1 < BENCH_JSON_MAX_DEPTH)
        j->depth++;
    j->has_items[j->depth] = false;
}

static void end_container(bench_json *j, char c)
{
    bool had = j->has_items[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (had) {
        fputc('\n', j->f);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->f);
    }
    fputc(c, j->f);
    if (j->depth == 0)
        fputc('\n', j->f);
}

void bench_json_begin_object(bench_json *j, const char *key)
{
    begin_container(j, key, '{');
}

void bench_json_end_object(bench_json *j)
{
    end_container(j, '}');
}

void bench_json_begin_array(bench_json *j, const char *key)
{
    begin_container(j, key, '[');
}

void bench_json_end_array(bench_json *j)
{
    end_container(j, ']');
}

void bench_json_string(bench_json *j, const char *key, const char *value)
{
    item(j, key);
    if (value == NULL)
        fputs("null", j->f);
    else
        bench_json_write_escaped(j->f, value);
}

void bench_json_number(bench_json *j, const char *key, double value)
{
    item(j, key);
    if (isfinite(value))
        fprintf(j->f, "%.10g", value);
    else
        fputs("null", j->f);
}

void bench_json_int(bench_json *j, const char *key, long long value)
{
    item(j, key);
    fprintf(j->f, "%lld", value);
}

void bench_json_bool(bench_json *j, const char *key, bool value)
{
    item(j, key);
    fputs(value ? "true" : "false", j->f);
}

void bench_json_null(bench_json *j, const char *key)
{
    item(j, key);
    fputs("null", j->f);
}
