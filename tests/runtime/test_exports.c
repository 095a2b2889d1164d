/* What runnel's shared objects export (`nm -D --defined-only`).
 *
 * runnel is built with -fvisibility=hidden and exports what its public
 * headers declare RN_API (include/runnel/api.h):
 * - libruntime.so exports exactly the RN_API functions of include/runnel/,
 *   every one of them, and not the entry points plugins define;
 * - a plugin exports rn_plugin_entry, an extension rn_extension_entry, and
 *   nothing else but RN_API names. Those are the copies of the plugin ABI's
 *   helpers (rn_set_error, rn_last_error, rn_node_*, ...) that a plugin
 *   linking runnel's libraries statically carries (SLOWDEV, TESTDEV): they
 *   stay exported so that the dynamic linker binds the plugin's calls to the
 *   host's libruntime.so, and the messages the plugin sets are the ones
 *   rn_last_error() shows the application. An extension built against the
 *   headers only (libtwice.so) carries none.
 * The linker's own symbols (_init, _fini, __bss_start, _edata, _end) and
 * version nodes are not counted. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define HEADERS "include/runnel"
#define RUNTIME "runtime/libruntime.so"

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

/* The functions include/runnel/ declares RN_API: each such declaration
 * starts a line with "RN_API ", its name just before the first '('. */
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
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "cannot open %s", path);
        char line[1024];
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "RN_API ", 7) != 0)
                continue;
            char *paren = strchr(line, '(');
            cr_assert_not_null(paren, "%s: an RN_API line without '(': %s", path, line);
            char *end = paren;
            char *start = end;
            while (start > line && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
                                    (start[-1] >= '0' && start[-1] <= '9')))
                start--;
            *end = '\0';
            list_add(out, start);
        }
        fclose(f);
    }
    closedir(dir);
    cr_assert_gt(out->count, 100, "only %zu RN_API declarations found", out->count);
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
        bool skip = false;
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

static name_list api, symbols;

Test(exports, libruntime_exports_exactly_the_rn_api_functions)
{
    declared_api(&api);
    exported(RUNTIME, &symbols);
    char extra[4096] = "", missing[4096] = "";
    for (size_t i = 0; i < symbols.count; i++) {
        const char *s = symbols.names[i];
        if (!list_has(&api, s) || strcmp(s, "rn_plugin_entry") == 0 ||
            strcmp(s, "rn_extension_entry") == 0)
            report(extra, sizeof extra, s);
    }
    for (size_t i = 0; i < api.count; i++) {
        const char *s = api.names[i];
        if (strcmp(s, "rn_plugin_entry") != 0 && strcmp(s, "rn_extension_entry") != 0 &&
            !list_has(&symbols, s))
            report(missing, sizeof missing, s);
    }
    cr_expect_str_empty(extra, "%s exports what no public header declares RN_API: %s", RUNTIME,
                        extra);
    cr_expect_str_empty(missing, "%s does not export these RN_API functions: %s", RUNTIME, missing);
}

/* `path` exports `entry` (unless NULL) and otherwise RN_API names only. */
static void check_module(const char *path, const char *entry)
{
    declared_api(&api);
    exported(path, &symbols);
    char extra[4096] = "";
    for (size_t i = 0; i < symbols.count; i++) {
        const char *s = symbols.names[i];
        bool is_entry = strcmp(s, "rn_plugin_entry") == 0 || strcmp(s, "rn_extension_entry") == 0;
        if (entry != NULL && strcmp(s, entry) == 0)
            continue;
        if (is_entry || !list_has(&api, s))
            report(extra, sizeof extra, s);
    }
    cr_expect_str_empty(extra, "%s exports more than %s and RN_API helpers: %s", path,
                        entry != NULL ? entry : "nothing", extra);
    if (entry != NULL)
        cr_expect(list_has(&symbols, entry), "%s does not export %s", path, entry);
}

Test(exports, plugins_export_rn_plugin_entry_and_rn_api_helpers_only)
{
    check_module("tests/slowdev/libslowdev.so", "rn_plugin_entry");
    check_module("plugins/nvidia/libnvidia.so", "rn_plugin_entry"); /* cudart stays hidden */
    check_module("tests/plugins/libtestdev.so", "rn_plugin_entry");
    check_module("tests/plugins/libtestdev_failing.so", "rn_plugin_entry");
    check_module("tests/plugins/libtestdev_bad_abi.so", "rn_plugin_entry");
    /* Its other function is hidden like everything else: no entry at all. */
    check_module("tests/plugins/libtestdev_no_entry.so", NULL);
}

Test(exports, a_plugin_built_on_the_headers_exports_rn_plugin_entry_only)
{
    check_module("tests/plugins/libheaders_only.so", "rn_plugin_entry");
    cr_expect_eq(symbols.count, 1, "libheaders_only.so is built against the headers only");
}

Test(exports, extensions_export_rn_extension_entry_only)
{
    check_module("tests/extensions/libtwice.so", "rn_extension_entry");
    cr_expect_eq(symbols.count, 1, "libtwice.so is built against the headers only");
}
