/* What the command-line tools (bench, compile, query) share: number
 * parsing for flags, the core with its plugins, picking and checking a
 * device, and files (whole-file reads, export blobs). All use the public
 * API only. */
#ifndef RUNNEL_TOOLS_BENCH_CLI_H
#define RUNNEL_TOOLS_BENCH_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "runnel/runnel.h"

/* Under `bazel run`, moves to the directory the user ran Bazel from
 * ($BUILD_WORKING_DIRECTORY), so that relative paths in flags mean what the
 * user meant. Elsewhere a no-op. */
void bench_cli_enter_user_dir(void);

/* Parses a whole decimal number in [lo, hi]; false on anything else. */
bool bench_cli_parse_ll(const char *text, long long lo, long long hi, long long *out);

/* Parses a finite decimal number > 0; false on anything else. */
bool bench_cli_parse_positive(const char *text, double *out);

/* The flag's name without its leading dashes ("-m" and "--m" are "m"), or
 * NULL when `arg` is not a flag. */
const char *bench_cli_flag(const char *arg);

/* argv joined with spaces (arguments with spaces or quotes in single
 * quotes), truncated to size. */
void bench_cli_command_line(int argc, char **argv, char *buf, size_t size);

/* Compile-time properties given as -p KEY=VALUE (bench, run), in order. */
#define BENCH_CLI_MAX_PROPS 16
typedef struct bench_cli_props {
    char kv[BENCH_CLI_MAX_PROPS][2][256]; /* key, value */
    int n;
} bench_cli_props;

/* Adds `text`, "KEY=VALUE" with a non-empty key and value, to props.
 * RN_INVALID_ARG with a message naming `flag` and the text when it is not
 * KEY=VALUE, too long, or one too many. The device validates key and
 * value at compile time. */
rn_status bench_cli_add_property(bench_cli_props *props, const char *flag, const char *text);

/* Creates a core that loads the plugins file `plugins` (NULL: none) as
 * $RUNNEL_PLUGINS (it is set to the file): before the plugins installed
 * beside libruntime.so, so that a device the file names replaces the
 * installed one of that name. A plugin that fails to load is not an error
 * here: its device is absent and listed as failed. */
rn_status bench_cli_core(const char *plugins, rn_core **out);

/* The best device available: the first of AUTO's DEFAULT_DEVICE_PRIORITIES
 * (NVIDIA or another discrete GPU, then CPU above an OpenCL device of CPU
 * type, then REF), else the first device; a static buffer. NULL when there
 * is none. */
const char *bench_cli_best_device(const rn_core *core);

/* RN_OK when `device` is available; otherwise RN_NOT_FOUND with a message
 * that says why (the failure reason of a plugin that did not load) and
 * which devices are available. */
rn_status bench_cli_check_device(const rn_core *core, const char *device);

/* Reads a whole file into *data (malloc'ed; the caller frees it). */
rn_status bench_cli_read_file(const char *path, void **data, size_t *size);

/* Writes a whole file (through a temporary file renamed into place, so
 * that a failed write leaves no partial file). */
rn_status bench_cli_write_file(const char *path, const void *data, size_t size);

/* True when the file starts like an export blob (magic "RNNLBLOB", see
 * docs/export.md). */
bool bench_cli_is_blob_file(const char *path);

/* The device a blob was exported for, from its header, into buf; false
 * when the header cannot be read. */
bool bench_cli_blob_device(const void *data, size_t size, char *buf, size_t buf_size);

#endif /* RUNNEL_TOOLS_BENCH_CLI_H */
