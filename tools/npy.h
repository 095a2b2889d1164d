/* Reading and writing NumPy .npy files (format 1.0/2.0, little-endian,
 * C order) as rn_tensors. Used by the tools. */
#ifndef RUNNEL_TOOLS_NPY_H
#define RUNNEL_TOOLS_NPY_H

#include <stdio.h>

#include "runnel/runnel.h"

/* Reads a .npy file into a new owned tensor. Fortran order, big-endian data
 * and object arrays are errors naming the file. */
rn_status npy_read(const char *path, rn_tensor **out);

/* As npy_read, from an open stream positioned at the file's start (left
 * open); `path` names it in messages. */
rn_status npy_read_stream(FILE *f, const char *path, rn_tensor **out);

/* Writes a tensor as a .npy file (version 1.0). */
rn_status npy_write(const char *path, const rn_tensor *tensor);

#endif /* RUNNEL_TOOLS_NPY_H */
