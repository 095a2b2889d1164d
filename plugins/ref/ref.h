/* REF: the reference device. Plain C kernels, one file per op or op family
 * under kernels/, registered per op type. Every other device is checked
 * against it. */
#ifndef RUNNEL_PLUGINS_REF_REF_H
#define RUNNEL_PLUGINS_REF_REF_H

#include "base/kit.h"
#include "plugins/api/kernel.h"
#include "runnel/plugin.h"

/* The REF plugin's vtable (built in: the Core registers it at start). */
extern const rn_plugin_ops ref_plugin_ops;

/* Registers every REF kernel into r. */
RN_KIT rn_status ref_register_kernels(plugin_kernel_registry *r);

/* The kernel families, each a NULL-terminated list defined in
 * plugins/ref/kernels/list_<family>.c. Adding a kernel: its file under
 * kernels/ plus one line in its family's list. */
extern const plugin_kernel *const ref_kernels_nn[];
extern const plugin_kernel *const ref_kernels_elementwise[];
extern const plugin_kernel *const ref_kernels_movement[];
extern const plugin_kernel *const ref_kernels_reduce[];
extern const plugin_kernel *const ref_kernels_indexing[];
extern const plugin_kernel *const ref_kernels_image[];
extern const plugin_kernel *const ref_kernels_quant[];
extern const plugin_kernel *const ref_kernels_signal[];
extern const plugin_kernel *const ref_kernels_rnn[];
extern const plugin_kernel *const ref_kernels_random[];
extern const plugin_kernel *const ref_kernels_math[];
extern const plugin_kernel *const ref_kernels_control[];
extern const plugin_kernel *const ref_kernels_sequence[];
extern const plugin_kernel *const ref_kernels_string[];
extern const plugin_kernel *const ref_kernels_contrib[]; /* com.microsoft */
extern const plugin_kernel *const ref_kernels_ml[];      /* ai.onnx.ml */

#endif /* RUNNEL_PLUGINS_REF_REF_H */
