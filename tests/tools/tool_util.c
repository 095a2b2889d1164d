/* Subprocesses, files and a JSON parser for the tools' tests. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tools/tool_util.h"

void tool_temp_dir(char *buf, size_t size)
{
    const char *base = getenv("TEST_TMPDIR");
    snprintf(buf, size, "%s/tools_XXXXXX", base && base[0] ? base : "/tmp");
    if (mkdtemp(buf) == NULL)
        snprintf(buf, size, "%s", base && base[0] ? base : "/tmp");
}

char *tool_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf == NULL)
            break;
        if (used + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (grown == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + used, 1, cap - used - 1, f);
        used += got;
        if (got == 0)
            break;
    }
    fclose(f);
    if (buf != NULL) {
        buf[used] = '\0';
        if (size != NULL)
            *size = used;
    }
    return buf;
}

tool_run tool_exec(const char *tool, const char *const *args, const char *const *env)
{
    tool_run r = {.status = -1};
    char dir[512], out_path[600], err_path[600], exe[256];
    tool_temp_dir(dir, sizeof dir);
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    snprintf(exe, sizeof exe, "tools/%s", tool);
    const char *argv[128];
    size_t n = 0;
    argv[n++] = exe;
    for (size_t i = 0; args != NULL && args[i] != NULL && n < 127; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0)
            _exit(127);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        for (size_t i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    int status;
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
        r.status = WEXITSTATUS(status);
    r.out = tool_read_file(out_path, NULL);
    r.err = tool_read_file(err_path, NULL);
    if (r.out == NULL)
        r.out = calloc(1, 1);
    if (r.err == NULL)
        r.err = calloc(1, 1);
    return r;
}

void tool_run_free(tool_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

size_t tool_count_lines(const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        if (*p == '\n' || p[1] == '\0')
            n++;
    return n;
}

/* ---- JSON ---- */

typedef struct parser {
    const char *p, *start;
    char *error;
    size_t error_size;
    int depth;
} parser;

static json_value *fail(parser *ps, const char *what)
{
    if (ps->error != NULL && ps->error[0] == '\0')
        snprintf(ps->error, ps->error_size, "%s at byte %ld", what, (long)(ps->p - ps->start));
    return NULL;
}

static void skip_ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static json_value *parse_value(parser *ps);

/* Parses a string literal into a malloc'ed UTF-8 string. */
static char *parse_string(parser *ps)
{
    if (*ps->p != '"') {
        fail(ps, "expected a string");
        return NULL;
    }
    ps->p++;
    size_t cap = 32, n = 0;
    char *s = malloc(cap);
    while (s != NULL) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '\0' || c < 0x20) {
            fail(ps, "unterminated string or control character");
            break;
        }
        ps->p++;
        if (c == '"') {
            s[n] = '\0';
            return s;
        }
        if (n + 8 >= cap) {
            char *grown = realloc(s, cap * 2);
            if (grown == NULL)
                break;
            s = grown;
            cap *= 2;
        }
        if (c != '\\') {
            s[n++] = (char)c;
            continue;
        }
        char e = *ps->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != '\0' && simple != NULL) {
            s[n++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
        } else if (e == 'u') {
            unsigned v = 0;
            for (int i = 0; i < 4; i++) {
                char h = *ps->p++;
                int d = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
                if (d < 0) {
                    fail(ps, "bad \\u escape");
                    free(s);
                    return NULL;
                }
                v = v * 16 + (unsigned)d;
            }
            /* Enough for the tests: code points below 0x800. */
            if (v < 0x80) {
                s[n++] = (char)v;
            } else {
                s[n++] = (char)(0xc0 | (v >> 6));
                s[n++] = (char)(0x80 | (v & 0x3f));
            }
        } else {
            fail(ps, "bad escape");
            break;
        }
    }
    free(s);
    return NULL;
}

static json_value *new_value(json_type t)
{
    json_value *v = calloc(1, sizeof *v);
    if (v != NULL)
        v->type = t;
    return v;
}

static int push(json_value *v, char *key, json_value *item)
{
    json_value **items = realloc(v->items, (v->n + 1) * sizeof *items);
    if (items == NULL)
        return -1;
    v->items = items;
    if (v->type == JSON_OBJECT) {
        char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
        if (keys == NULL)
            return -1;
        v->keys = keys;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = item;
    return 0;
}

static json_value *parse_container(parser *ps, bool object)
{
    json_value *v = new_value(object ? JSON_OBJECT : JSON_ARRAY);
    if (v == NULL)
        return fail(ps, "out of memory");
    ps->p++;
    skip_ws(ps);
    if (*ps->p == (object ? '}' : ']')) {
        ps->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (object) {
            if ((key = parse_string(ps)) == NULL)
                break;
            skip_ws(ps);
            if (*ps->p != ':') {
                free(key);
                fail(ps, "expected ':'");
                break;
            }
            ps->p++;
        }
        json_value *item = parse_value(ps);
        if (item == NULL || push(v, key, item) != 0) {
            free(key);
            json_free(item);
            break;
        }
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == (object ? '}' : ']')) {
            ps->p++;
            return v;
        }
        fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    json_free(v);
    return NULL;
}

static json_value *parse_number(parser *ps)
{
    const char *s = ps->p;
    if (*ps->p == '-')
        ps->p++;
    if (*ps->p == '0')
        ps->p++;
    else if (*ps->p >= '1' && *ps->p <= '9')
        while (*ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    else
        return fail(ps, "bad number");
    if (*ps->p == '.') {
        ps->p++;
        if (!(*ps->p >= '0' && *ps->p <= '9'))
            return fail(ps, "bad fraction");
        while (*ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (*ps->p == 'e' || *ps->p == 'E') {
        ps->p++;
        if (*ps->p == '+' || *ps->p == '-')
            ps->p++;
        if (!(*ps->p >= '0' && *ps->p <= '9'))
            return fail(ps, "bad exponent");
        while (*ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    json_value *v = new_value(JSON_NUMBER);
    if (v == NULL)
        return fail(ps, "out of memory");
    v->number = strtod(s, NULL);
    return v;
}

static json_value *parse_value(parser *ps)
{
    skip_ws(ps);
    if (++ps->depth > 64)
        return fail(ps, "nested too deeply");
    json_value *v = NULL;
    switch (*ps->p) {
    case '{':
        v = parse_container(ps, true);
        break;
    case '[':
        v = parse_container(ps, false);
        break;
    case '"': {
        char *s = parse_string(ps);
        if (s != NULL && (v = new_value(JSON_STRING)) != NULL)
            v->string = s;
        else
            free(s);
        break;
    }
    case 't':
    case 'f':
    case 'n': {
        const char *words[] = {"true", "false", "null"};
        for (int i = 0; i < 3; i++)
            if (strncmp(ps->p, words[i], strlen(words[i])) == 0) {
                ps->p += strlen(words[i]);
                v = new_value(i == 2 ? JSON_NULL : JSON_BOOL);
                if (v != NULL)
                    v->boolean = i == 0;
            }
        if (v == NULL)
            fail(ps, "bad literal");
        break;
    }
    default:
        v = parse_number(ps);
    }
    ps->depth--;
    return v;
}

json_value *json_parse(const char *text, char *error, size_t error_size)
{
    parser ps = {.p = text, .start = text, .error = error, .error_size = error_size};
    if (error != NULL && error_size > 0)
        error[0] = '\0';
    json_value *v = parse_value(&ps);
    if (v == NULL)
        return NULL;
    skip_ws(&ps);
    if (*ps.p != '\0') {
        json_free(v);
        return fail(&ps, "text after the value");
    }
    return v;
}

void json_free(json_value *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->n; i++) {
        json_free(v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    free(v);
}

const json_value *json_member(const json_value *object, const char *key)
{
    if (object == NULL || object->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < object->n; i++)
        if (strcmp(object->keys[i], key) == 0)
            return object->items[i];
    return NULL;
}

const json_value *json_at(const json_value *root, const char *path)
{
    char key[128];
    const json_value *v = root;
    while (v != NULL && *path != '\0') {
        const char *dot = strchr(path, '.');
        size_t len = dot ? (size_t)(dot - path) : strlen(path);
        if (len >= sizeof key)
            return NULL;
        memcpy(key, path, len);
        key[len] = '\0';
        v = json_member(v, key);
        path += len + (dot ? 1 : 0);
    }
    return v;
}
