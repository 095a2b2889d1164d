/* What the REF recurrent kernels (RNN, GRU, LSTM) share (private to
 * plugins/ref): reading and checking their inputs into double arrays in
 * layout 0, the activation functions, and writing the outputs back in the
 * node's layout and element type. Defined in rnn.c.
 *
 * Every kernel computes in double and rounds once to the output type.
 */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_RNN_UTIL_H
#define RUNNEL_PLUGINS_REF_KERNELS_RNN_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "plugins/api/kernel.h"

/* An activation with its alpha and beta (ONNX's defaults when not given). */
typedef struct ref_rnn_act {
    int kind; /* private to rnn.c */
    double alpha, beta;
} ref_rnn_act;

/* The most activations a direction uses (LSTM's f, g, h). */
#define REF_RNN_MAX_ACTS 3

/* A recurrent node's inputs, shapes and outputs, all in layout 0:
 * x [seq][batch][input], y [seq][dirs][batch][hidden], states
 * [dirs][batch][hidden]. */
typedef struct ref_rnn {
    const graph_node *node;
    int64_t seq, batch, input, hidden, dirs, gates;
    bool reverse; /* direction "reverse" (one direction, walked backwards) */
    double clip;  /* > 0: pre-activations are clamped to [-clip, clip] */
    ref_rnn_act act[2][REF_RNN_MAX_ACTS];
    double *x;    /* [seq][batch][input] */
    double *w;    /* [dirs][gates * hidden][input] */
    double *r;    /* [dirs][gates * hidden][hidden] */
    double *b;    /* [dirs][2 * gates * hidden]: Wb then Rb (zeros when absent) */
    double *h0;   /* [dirs][batch][hidden] (zeros when absent) */
    double *c0;   /* LSTM: [dirs][batch][hidden] (zeros when absent) */
    double *p;    /* LSTM: [dirs][3 * hidden] peepholes i, o, f (zeros when absent) */
    int64_t *len; /* [batch] sequence lengths (seq when absent) */
    double *y;    /* [seq][dirs][batch][hidden], zeros past each sequence's end */
    double *yh;   /* [dirs][batch][hidden] */
    double *yc;   /* LSTM: [dirs][batch][hidden] */
} ref_rnn;

/* compile time: X, W and R present with one float type, every other input
 * of that type (sequence_lens i32), known direction and activations. */
bool ref_rnn_supports(const graph_node *node, int n_acts, const char **why);

/* Reads the node's inputs into r (gates per direction, n_acts activations
 * per direction with the defaults `dflt`). Errors name the node and what is
 * wrong (a shape, a sequence length out of range, an activation). On error
 * nothing is left allocated. */
rn_status ref_rnn_init(const plugin_kernel_args *args, int gates, int n_acts,
                       const char *const *dflt, ref_rnn *r);

/* Applies activation a to v (after clipping v when clip > 0). */
double ref_rnn_apply(const ref_rnn *r, const ref_rnn_act *a, double v);

/* out[i] += sum_k m[i * cols + k] * v[k] for i < rows. */
void ref_rnn_gemv(const double *m, int64_t rows, int64_t cols, const double *v, double *out);

/* Whether direction d walks the sequence backwards. */
bool ref_rnn_backward(const ref_rnn *r, int64_t d);

/* Writes y, yh (and yc for outputs[2]) into the node's present outputs. */
rn_status ref_rnn_finish(plugin_kernel_args *args, const ref_rnn *r);

/* Frees r's buffers (per-run memory from ref_tmp_alloc, tmp.h) and clears r. */
void ref_rnn_free(ref_rnn *r);

#endif /* RUNNEL_PLUGINS_REF_KERNELS_RNN_UTIL_H */
