/* What runnel's shared objects export (`nm -D --defined-only`).
 *
 * runnel is built with -fvisibility=hidden and exports what its headers
 * declare RN_API (the public API, include/runnel/api.h) or RN_KIT (the
 * device kit that in-tree plugins link, base/kit.h):
 * - libruntime.so exports exactly the RN_API functions of include/runnel/
 *   and the RN_KIT declarations of the kit's headers (the list
 *   plugins/api:kit writes), every one of them, and not the entry points
 *   plugins define;
 * - a plugin built against the kit (GPU, NVIDIA, SLOWDEV, TESTDEV) links
 *   libruntime.so and exports rn_plugin_entry and rn_plugin_kit (its kit
 *   id) only: no private copy of runnel's code, so nothing else;
 * - a plugin or an extension built against include/runnel only exports its
 *   entry point only.
 * The linker's own symbols (_init, _fini, __bss_start, _edata, _end),
 * version nodes and AddressSanitizer's __odr_asan.* are not counted. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define HEADERS     "include/runnel"
#define KIT_HEADERS "plugins/api/kit_headers.txt"
#define RUNTIME     "runtime/libruntime.so"
#define KIT_ID      "rn_plugin_kit"

#define MAX_NAMES 1024
#define NAME_MAX_ 128

typedef struct name_list {
    size_t count;
    char names[MAX_NAMES][NAME_MAX_];
} name_list;

static bool list_has(const name_list *list, const char *name)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->names[i], name) == 0)
            return true;
    return false;
}

static void list_add(name_list *list, const char *name)
{
    cr_assert_lt(list->count, MAX_NAMES, "more than %d names", MAX_NAMES);
    cr_assert_lt(strlen(name), NAME_MAX_, "name too long: %s", name);
    snprintf(list->names[list->count++], NAME_MAX_, "%s", name);
}

/* Adds the names `path` declares with `marker` ("RN_API ", "RN_KIT "): each
 * such declaration starts a line with the marker, a function's name just
 * before the first '(', a variable's before the ';'. */
static void declared_in(const char *path, const char *marker, name_list *out)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char line[1024];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, marker, strlen(marker)) != 0)
            continue;
        char *end = strchr(line, '(');
        if (end == NULL)
            end = strchr(line, ';');
        cr_assert_not_null(end, "%s: a %sline without '(' or ';': %s", path, marker, line);
        char *start = end;
        while (start > line && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
                                (start[-1] >= '0' && start[-1] <= '9')))
            start--;
        *end = '\0';
        list_add(out, start);
    }
    fclose(f);
}

/* The functions include/runnel/ declares RN_API. */
static void declared_api(name_list *out)
{
    out->count = 0;
    DIR *dir = opendir(HEADERS);
    cr_assert_not_null(dir, "cannot open %s", HEADERS);
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".h") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", HEADERS, e->d_name);
        declared_in(path, "RN_API ", out);
    }
    closedir(dir);
    cr_assert_gt(out->count, 100, "only %zu RN_API declarations found", out->count);
}

/* What the device kit's headers declare RN_KIT. */
static void declared_kit(name_list *out)
{
    out->count = 0;
    FILE *f = fopen(KIT_HEADERS, "r");
    cr_assert_not_null(f, "cannot open %s", KIT_HEADERS);
    char path[512];
    size_t headers = 0;
    while (fgets(path, sizeof path, f) != NULL) {
        path[strcspn(path, "\n")] = '\0';
        declared_in(path, "RN_KIT ", out);
        headers++;
    }
    fclose(f);
    cr_assert_gt(headers, 10, "%s lists %zu headers", KIT_HEADERS, headers);
    /* What GPU, NVIDIA and the test devices call: the generic device, REF's
     * kernels, passes. */
    cr_assert_gt(out->count, 40, "only %zu RN_KIT declarations found", out->count);
}

/* The defined dynamic symbols of a shared object, as nm -D lists them. */
static void exported(const char *path, name_list *out)
{
    out->count = 0;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "cannot run nm");
    char line[512];
    while (fgets(line, sizeof line, p) != NULL) {
        char type;
        char name[NAME_MAX_ + 64];
        /* "0000000000012345 T rn_core_create" */
        if (sscanf(line, "%*s %c %191s", &type, name) != 2)
            continue;
        if (type == 'A') /* a version node */
            continue;
        name[strcspn(name, "@")] = '\0'; /* rn_x@@VERSION */
        static const char *const linker[] = {"_init", "_fini", "__bss_start", "_edata", "_end"};
        /* AddressSanitizer's ODR indicator beside each exported variable
         * (rn_plugin_kit, plugin_generic_request_ops) under --config=asan. */
        bool skip = strncmp(name, "__odr_asan.", 11) == 0;
        for (size_t i = 0; i < sizeof linker / sizeof linker[0]; i++)
            skip = skip || strcmp(name, linker[i]) == 0;
        if (!skip)
            list_add(out, name);
    }
    int rc = pclose(p);
    cr_assert_eq(rc, 0, "nm -D --defined-only %s failed (%d)", path, rc);
}

/* Appends `name` to a comma-separated report. */
static void report(char *buf, size_t size, const char *name)
{
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "%s%s", n > 0 ? ", " : "", name);
}

static name_list api, kit, symbols;

static bool is_entry(const char *s)
{
    return strcmp(s, "rn_plugin_entry") == 0 || strcmp(s, "rn_extension_entry") == 0 ||
           strcmp(s, KIT_ID) == 0;
}

Test(exports, libruntime_exports_exactly_the_rn_api_and_rn_kit_declarations)
{
    declared_api(&api);
    declared_kit(&kit);
    exported(RUNTIME, &symbols);
    char extra[4096] = "", missing[4096] = "";
    for (size_t i = 0; i < symbols.count; i++) {
        const char *s = symbols.names[i];
        if ((!list_has(&api, s) && !list_has(&kit, s)) || is_entry(s))
            report(extra, sizeof extra, s);
    }
    for (size_t i = 0; i < api.count; i++) {
        const char *s = api.names[i];
        if (!is_entry(s) && !list_has(&symbols, s))
            report(missing, sizeof missing, s);
    }
    for (size_t i = 0; i < kit.count; i++)
        if (!list_has(&symbols, kit.names[i]))
            report(missing, sizeof missing, kit.names[i]);
    cr_expect_str_empty(extra, "%s exports what no header declares RN_API or RN_KIT: %s", RUNTIME,
                        extra);
    cr_expect_str_empty(missing, "%s does not export these RN_API/RN_KIT declarations: %s", RUNTIME,
                        missing);
}

/* `path` exports exactly the NULL-ended `names`. */
static void check_module(const char *path, const char *const *names)
{
    exported(path, &symbols);
    char extra[4096] = "";
    size_t expected = 0;
    for (size_t i = 0; i < symbols.count; i++) {
        bool listed = false;
        for (const char *const *n = names; *n != NULL; n++)
            listed = listed || strcmp(symbols.names[i], *n) == 0;
        if (!listed)
            report(extra, sizeof extra, symbols.names[i]);
    }
    cr_expect_str_empty(extra, "%s exports more than it should: %s", path, extra);
    for (const char *const *n = names; *n != NULL; n++, expected++)
        cr_expect(list_has(&symbols, *n), "%s does not export %s", path, *n);
    cr_expect_eq(symbols.count, expected, "%s exports %zu names, expected %zu", path, symbols.count,
                 expected);
}

static const char *const kit_plugin[] = {"rn_plugin_entry", KIT_ID, NULL};

Test(exports, plugins_built_on_the_kit_export_their_entry_and_kit_id_only)
{
    check_module("plugins/gpu/libgpu.so", kit_plugin);
    check_module("plugins/nvidia/libnvidia.so", kit_plugin); /* cudart stays hidden */
    check_module("tests/slowdev/libslowdev.so", kit_plugin);
    check_module("tests/plugins/libtestdev.so", kit_plugin);
    check_module("tests/plugins/libtestdev_failing.so", kit_plugin);
    check_module("tests/plugins/libtestdev_bad_abi.so", kit_plugin);
    check_module("tests/plugins/libtestdev_other_kit.so", kit_plugin);
    /* Its other function is hidden like everything else: no entry at all. */
    check_module("tests/plugins/libtestdev_no_entry.so", (const char *const[]){KIT_ID, NULL});
}

Test(exports, a_plugin_built_on_the_headers_exports_rn_plugin_entry_only)
{
    check_module("tests/plugins/libheaders_only.so",
                 (const char *const[]){"rn_plugin_entry", NULL});
}

Test(exports, extensions_export_rn_extension_entry_only)
{
    check_module("tests/extensions/libtwice.so", (const char *const[]){"rn_extension_entry", NULL});
}
