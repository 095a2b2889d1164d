/* grpc_load: a lean KServe v2 gRPC load client (grpc_load.h) for
 * bench/server/protocols and bench/server/front_profile. Not a test.
 *
 *   grpc_load HOST:PORT MODEL CONCURRENCY SECONDS [--requests N] [--version V]
 *             [--timeout-ms MS]
 *
 * keeps CONCURRENCY ModelInfer calls of MODEL in flight for SECONDS (or
 * until N have started; SECONDS 0: N only), each a real ModelInferRequest
 * built from the model's metadata with contents in raw_input_contents, each
 * answer decoded and checked (status, outputs, datatypes, shapes, sizes).
 * Prints one JSON line: answers (checked OK), errors, seconds, rate
 * (answers/s), p50_ms, p99_ms, cpu_ms (this process's CPU per answer),
 * request_bytes, response_bytes, and first_status / first_error when an
 * answer failed. Exit status 0 when every answer passed, 1 when some did
 * not, 2 when no load could start (the reason on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/server/grpc_load.h"

static void usage(void)
{
    fprintf(stderr, "usage: grpc_load HOST:PORT MODEL CONCURRENCY SECONDS [--requests N] "
                    "[--version V] [--timeout-ms MS]\n");
}

int main(int argc, char **argv)
{
    if (argc < 5 || (argc - 5) % 2 != 0) {
        usage();
        return 2;
    }
    grpc_load_config config = {.target = argv[1],
                               .model = argv[2],
                               .concurrency = (unsigned)atoi(argv[3]),
                               .seconds = atof(argv[4]),
                               .seed = 1};
    for (int i = 5; i < argc; i += 2) {
        if (strcmp(argv[i], "--requests") == 0)
            config.requests = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--version") == 0)
            config.version = argv[i + 1];
        else if (strcmp(argv[i], "--timeout-ms") == 0)
            config.timeout_ms = atof(argv[i + 1]);
        else {
            usage();
            return 2;
        }
    }
    if (atoi(argv[3]) < 1 || config.seconds < 0 || (config.seconds == 0 && !config.requests)) {
        fprintf(stderr, "grpc_load: CONCURRENCY >= 1, and SECONDS > 0 or --requests N\n");
        return 2;
    }
    grpc_load_report r;
    char why[512];
    if (grpc_load_run(&config, &r, why, sizeof why) != 0) {
        fprintf(stderr, "grpc_load: %s\n", why);
        return 2;
    }
    printf("{\"answers\": %zu, \"errors\": %zu, \"seconds\": %.3f, \"rate\": %.3f, "
           "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"cpu_ms\": %.4f, \"request_bytes\": %zu, "
           "\"response_bytes\": %zu",
           r.answers, r.errors, r.seconds, r.rate, r.p50_ms, r.p99_ms, r.cpu_ms, r.request_bytes,
           r.response_bytes);
    if (r.errors) {
        printf(", \"first_status\": %d, \"first_error\": \"", r.first_status);
        for (const char *c = r.first_error; *c; c++)
            if (*c != '"' && *c != '\\' && (unsigned char)*c >= 32)
                putchar(*c);
        printf("\"");
    }
    printf("}\n");
    return r.errors ? 1 : 0;
}
