/* Helpers of the tools' tests: run a built tool as a subprocess and read
 * what it printed, read files, and a small JSON parser to check reports.
 *
 * The tools are the test's data: Bazel puts them at tools/<name> relative
 * to the test's working directory (the runfiles root). */
#ifndef RUNNEL_TESTS_TOOLS_TOOL_UTIL_H
#define RUNNEL_TESTS_TOOLS_TOOL_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#define NODE_DIR      "/usr/share/libonnx-testdata/data/node"
#define ADD_MODEL     NODE_DIR "/test_add/model.onnx"
#define CONV_MODEL    NODE_DIR "/test_conv_with_strides_padding/model.onnx"
#define PT_CONV_MODEL "/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/model.onnx"
#define DYN_MODEL     "tests/tools/data/dynamic_add.onnx"
#define LIGHT_DIR     ".cache/onnx-1.22.0/light"
#define SQUEEZENET    LIGHT_DIR "/light_squeezenet.onnx"
#define SLOWDEV_LIB   "tests/slowdev/libslowdev.so"
#define FAILING_LIB   "tests/plugins/libtestdev_failing.so"

/* What a tool run left: its exit status (-1 if it did not exit normally),
 * stdout and stderr (NUL-terminated, malloc'ed). */
typedef struct tool_run {
    int status;
    char *out;
    char *err;
} tool_run;

/* Runs tools/<tool> with the NULL-terminated arguments, stdin from
 * /dev/null, stdout and stderr captured. Extra environment settings
 * ("KEY=VALUE") may be given in env (NULL: none). */
tool_run tool_exec(const char *tool, const char *const *args, const char *const *env);
void tool_run_free(tool_run *r);

/* A directory of its own for a test's files (under $TEST_TMPDIR or /tmp). */
void tool_temp_dir(char *buf, size_t size);

/* Reads a whole file (NUL-terminated, malloc'ed) or NULL. */
char *tool_read_file(const char *path, size_t *size);

/* The number of lines of s (a final line without '\n' counts). */
size_t tool_count_lines(const char *s);

/* ---- JSON ---- */

typedef enum json_type {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json_value {
    json_type type;
    bool boolean;
    double number;
    char *string;
    size_t n;                  /* array items or object members */
    char **keys;               /* objects */
    struct json_value **items; /* arrays and objects' values */
} json_value;

/* Parses a complete JSON text (RFC 8259, no extensions). NULL when it is
 * not valid JSON; `error` then says where. */
json_value *json_parse(const char *text, char *error, size_t error_size);
void json_free(json_value *v);

/* The member `key` of an object, or NULL. */
const json_value *json_member(const json_value *object, const char *key);

/* Follows a dotted path of member names ("results.latency.median_ms"). */
const json_value *json_at(const json_value *root, const char *path);

#endif /* RUNNEL_TESTS_TOOLS_TOOL_UTIL_H */
