/* Logging for plugins, by the LOG_LEVEL property: a message goes to stderr
 * as "[runnel DEVICE] LEVEL: text" when its level is at or below the level
 * set (LOG_NONE, the default, prints nothing). Levels: errors of runs and
 * compiles (LOG_ERROR), anything surprising (LOG_WARNING), what a compile
 * made of a model (LOG_INFO), every run (LOG_DEBUG) and every kernel
 * (LOG_TRACE). */
#ifndef RUNNEL_PLUGINS_API_LOG_H
#define RUNNEL_PLUGINS_API_LOG_H

#include "base/kit.h"

/* The values of LOG_LEVEL, in plugin_properties.log_level. */
enum {
    PLUGIN_LOG_NONE = 0,
    PLUGIN_LOG_ERROR,
    PLUGIN_LOG_WARNING,
    PLUGIN_LOG_INFO,
    PLUGIN_LOG_DEBUG,
    PLUGIN_LOG_TRACE,
};

/* Prints one message at `level` when `threshold` (the LOG_LEVEL in force)
 * lets it through. One write per message, so lines of concurrent requests
 * do not interleave. */
RN_KIT void plugin_log(int threshold, int level, const char *device, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* RUNNEL_PLUGINS_API_LOG_H */
