/* RN_KIT: the device kit, what libruntime.so exports to in-tree plugins.
 *
 * runnel is built with -fvisibility=hidden. Besides the public API (RN_API,
 * include/runnel/api.h), libruntime.so exports the functions that the
 * in-tree device plugins (GPU, NVIDIA, the test devices) call: the generic
 * plan-based device of plugins/api, REF's kernels, the passes a device adds,
 * a few graph and scheduler helpers. Each is declared RN_KIT in its
 * component's header, and only those (tests/runtime:test_exports checks it).
 * So a plugin links libruntime.so instead of a private copy of runnel's
 * libraries: one op table and one set of executor pools per process.
 *
 * The kit is not a stable API: a plugin built against it carries the kit id
 * (PLUGIN_KIT_ID, a hash of the kit's headers, plugins/api:kit) and the
 * loader refuses a plugin whose id differs from the runtime's. Plugins built
 * outside the tree use include/runnel only (docs/plugins.md, section 9). */
#ifndef RUNNEL_BASE_KIT_H
#define RUNNEL_BASE_KIT_H

#if defined(__GNUC__) || defined(__clang__)
#define RN_KIT __attribute__((visibility("default")))
#else
#define RN_KIT
#endif

#endif /* RUNNEL_BASE_KIT_H */
