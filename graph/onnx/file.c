/* Reading whole files for the ONNX reader: models, tensor files. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/onnx/onnx_internal.h"

/* Files are mapped rather than read: protobuf-c copies what it keeps, so the
 * mapping only lives for the parse and costs no second heap copy of a model
 * that may be gigabytes. */
rn_status onnx_file_map(const char *path, onnx_file *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rn_set_error(RN_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return rn_set_error(RN_IO_ERROR, "cannot stat '%s': %s", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return rn_set_error(RN_IO_ERROR, "'%s' is not a regular file", path);
    }
    onnx_file f = {.size = (size_t)st.st_size};
    if (f.size == 0) {
        /* mmap refuses length 0; an empty buffer keeps callers uniform. */
        f.data = malloc(1);
        close(fd);
        if (f.data == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading '%s'", path);
        *out = f;
        return RN_OK;
    }
    f.data = mmap(NULL, f.size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (f.data == MAP_FAILED)
        return rn_set_error(RN_IO_ERROR, "cannot read '%s': %s", path, strerror(err));
    f.mapped = true;
    *out = f;
    return RN_OK;
}

void onnx_file_unmap(onnx_file *f)
{
    if (f->mapped)
        munmap(f->data, f->size);
    else
        free(f->data);
    memset(f, 0, sizeof *f);
}

char *onnx_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return strdup(".");
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* "/model.onnx" lives in "/" */
    char *dir = malloc(n + 1);
    if (dir == NULL)
        return NULL;
    memcpy(dir, path, n);
    dir[n] = '\0';
    return dir;
}
