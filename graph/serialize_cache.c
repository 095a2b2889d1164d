/* Hashing and the compiled-model cache (CACHE_DIR): XXH64 from libxxhash,
 * cache keys over a graph's encoding, and cache files that are stored
 * atomically. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/serialize_internal.h"

uint64_t graph_hash_bytes(const void *data, size_t size, uint64_t seed)
{
    return XXH64(data, size, seed);
}

/* ---- cache keys ---- */

typedef struct prop_ref {
    const char *key, *value;
} prop_ref;

static int cmp_props(const void *a, const void *b)
{
    const prop_ref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c != 0 ? c : strcmp(x->value, y->value);
}

rn_status graph_hash(const graph *g, size_t n_props, const char *const *keys,
                     const char *const *values, const char *device, const char *arch, uint64_t *out)
{
    if (n_props > 0 && (keys == NULL || values == NULL))
        return rn_set_error(RN_INVALID_ARG, "graph hash: %zu properties without keys or values",
                            n_props);
    prop_ref *props = calloc(n_props + 1, sizeof *props);
    if (props == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph hash: out of memory");
    for (size_t i = 0; i < n_props; i++) {
        if (keys[i] == NULL || values[i] == NULL) {
            free(props);
            return rn_set_error(RN_INVALID_ARG, "graph hash: property %zu has no key or value", i);
        }
        props[i] = (prop_ref){keys[i], values[i]};
    }
    qsort(props, n_props, sizeof *props, cmp_props);
    /* The state is allocated by the library: its layout is not part of the
     * shared library's stable ABI. */
    XXH64_state_t *h = XXH64_createState();
    if (h == NULL) {
        free(props);
        return rn_set_error(RN_OUT_OF_MEMORY, "graph hash: out of memory");
    }
    (void)XXH64_reset(h, 0);
    serial_sink s = {.hash = h};
    serial_put(&s, "RNNLHASH", 8);
    serial_put_str(&s, device);
    serial_put_str(&s, arch);
    serial_put_u64(&s, n_props);
    for (size_t i = 0; i < n_props; i++) {
        serial_put_str(&s, props[i].key);
        serial_put_str(&s, props[i].value);
    }
    free(props);
    serial_encode_payload(&s, g);
    uint64_t key = XXH64_digest(h);
    XXH64_freeState(h);
    if (s.st != RN_OK)
        return s.st;
    *out = key;
    return RN_OK;
}

/* ---- cache files ---- */

rn_status graph_cache_path(const char *dir, uint64_t key, char *buf, size_t size)
{
    if (dir == NULL || dir[0] == '\0')
        return rn_set_error(RN_INVALID_ARG, "cache: no cache folder given");
    int n = snprintf(buf, size, "%s/%016" PRIx64 ".rnblob", dir, key);
    if (n < 0 || (size_t)n >= size)
        return rn_set_error(RN_INVALID_ARG, "cache: the path of an entry in '%s' is too long", dir);
    return RN_OK;
}

/* mkdir -p: creates dir and its missing parents. */
static rn_status make_dirs(const char *dir)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s", dir);
    if (n < 0 || (size_t)n >= sizeof path)
        return rn_set_error(RN_INVALID_ARG, "cache: folder path '%s' is too long", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return rn_set_error(RN_IO_ERROR, "cache: cannot create folder '%s': %s", path,
                                strerror(errno));
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rn_set_error(RN_IO_ERROR, "cache: '%s' is not a folder", dir);
    return RN_OK;
}

rn_status graph_cache_store(const char *dir, uint64_t key, const void *bytes, size_t size)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    rn_status st = graph_cache_path(dir, key, path, sizeof path);
    if (st != RN_OK)
        return st;
    /* A hidden name that graph_cache_path never produces: a reader can never
     * open a half-written temporary file as an entry. */
    int n = snprintf(tmp, sizeof tmp, "%s/.%016" PRIx64 ".rnblob.XXXXXX", dir, key);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return rn_set_error(RN_INVALID_ARG, "cache: the path of an entry in '%s' is too long", dir);
    if ((st = make_dirs(dir)) != RN_OK)
        return st;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return rn_set_error(RN_IO_ERROR, "cache: cannot create a temporary file in '%s': %s", dir,
                            strerror(errno));
    const char *what = "write";
    const uint8_t *p = bytes;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, p + done, size - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            goto fail;
        }
        done += (size_t)w;
    }
    what = "sync";
    if (fsync(fd) != 0)
        goto fail;
    what = "close";
    int rc = close(fd);
    fd = -1;
    if (rc != 0)
        goto fail;
    what = "rename";
    if (rename(tmp, path) != 0)
        goto fail;
    /* Make the rename itself durable; a failure here loses at most the entry. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return RN_OK;
fail:;
    int err = errno ? errno : EIO;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return rn_set_error(RN_IO_ERROR, "cache: cannot %s '%s' (for entry '%s'): %s", what, tmp, path,
                        strerror(err));
}

rn_status graph_cache_load(const char *dir, uint64_t key, void **bytes, size_t *size)
{
    char path[PATH_MAX];
    rn_status st = graph_cache_path(dir, key, path, sizeof path);
    if (st != RN_OK)
        return st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return rn_set_error(RN_NOT_FOUND, "cache: no entry '%s'", path);
        return rn_set_error(RN_IO_ERROR, "cache: cannot open '%s': %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return rn_set_error(RN_IO_ERROR, "cache: '%s' is not a regular file", path);
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *data = malloc(n ? n : 1);
    if (data == NULL) {
        close(fd);
        return rn_set_error(RN_OUT_OF_MEMORY, "cache: out of memory for %zu bytes of '%s'", n,
                            path);
    }
    size_t done = 0;
    while (done < n) {
        ssize_t got = read(fd, data + done, n - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            int err = got < 0 ? errno : 0;
            close(fd);
            free(data);
            return rn_set_error(RN_IO_ERROR, "cache: cannot read '%s': %s", path,
                                err ? strerror(err) : "file shrank while reading");
        }
        done += (size_t)got;
    }
    close(fd);
    *bytes = data;
    *size = n;
    return RN_OK;
}
