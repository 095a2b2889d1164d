/* RN_API: what runnel exports.
 *
 * runnel is built with -fvisibility=hidden: a symbol leaves a shared object
 * only when its declaration says RN_API. Every function of the public API and
 * of the plugin ABI's helpers (rn_node_*, rn_set_error, ...) is declared so,
 * and so are the entry points a plugin or an extension defines
 * (rn_plugin_entry, rn_extension_entry): a plugin that includes runnel/plugin.h
 * exports its entry point without saying anything more. */
#ifndef RUNNEL_API_H
#define RUNNEL_API_H

#if defined(__GNUC__) || defined(__clang__)
#define RN_API __attribute__((visibility("default")))
#else
#define RN_API
#endif

#endif /* RUNNEL_API_H */
