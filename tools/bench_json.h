/* A small streaming JSON writer for the tools' -json reports (bench, query).
 *
 * Values are written in order as they are produced; the writer keeps the
 * nesting and the commas, escapes strings, and indents with two spaces so
 * the file is readable by people too. Every call takes the member's key,
 * which must be NULL for array elements and the top-level value. */
#ifndef RUNNEL_TOOLS_BENCH_JSON_H
#define RUNNEL_TOOLS_BENCH_JSON_H

#include <stdbool.h>
#include <stdio.h>

#define BENCH_JSON_MAX_DEPTH 32

typedef struct bench_json {
    FILE *f;
    int depth;
    bool has_items[BENCH_JSON_MAX_DEPTH]; /* a comma is due before the next item */
} bench_json;

/* Starts writing to `f` (the caller opens and closes it). */
void bench_json_init(bench_json *j, FILE *f);

void bench_json_begin_object(bench_json *j, const char *key);
void bench_json_end_object(bench_json *j);
void bench_json_begin_array(bench_json *j, const char *key);
void bench_json_end_array(bench_json *j);

/* A string; NULL is written as null. */
void bench_json_string(bench_json *j, const char *key, const char *value);
/* A number; NaN and infinities (which JSON lacks) are written as null. */
void bench_json_number(bench_json *j, const char *key, double value);
void bench_json_int(bench_json *j, const char *key, long long value);
void bench_json_bool(bench_json *j, const char *key, bool value);
void bench_json_null(bench_json *j, const char *key);

/* Writes `s` as a JSON string literal with its quotes (also used by the
 * HTML report's embedded data). */
void bench_json_write_escaped(FILE *f, const char *s);

#endif /* RUNNEL_TOOLS_BENCH_JSON_H */
