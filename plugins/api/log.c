/* plugin_log: LOG_LEVEL messages on stderr (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "plugins/api/log.h"

void plugin_log(int threshold, int level, const char *device, const char *fmt, ...)
{
    static const char *const names[] = {"", "ERROR", "WARNING", "INFO", "DEBUG", "TRACE"};
    if (level <= PLUGIN_LOG_NONE || level > PLUGIN_LOG_TRACE || level > threshold)
        return;
    char line[1024];
    int n = snprintf(line, sizeof line, "[runnel %s] %s: ", device != NULL ? device : "?",
                     names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line - 1)
        n = (int)sizeof line - 2; /* truncated: keep the newline */
    line[n++] = '\n';
    /* A single write(2): stdio's buffer could split a line between threads. */
    ssize_t done = write(STDERR_FILENO, line, (size_t)n);
    (void)done;
}
