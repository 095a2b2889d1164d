"""Shared compiler options. The warning set and -std=c17 live in .bazelrc."""

# Symbols are hidden unless declared RN_API (include/runnel/api.h) or RN_KIT
# (base/kit.h, the device kit): libruntime.so exports the public API, the
# plugin ABI and the kit only (tests/runtime:test_exports checks it). So
# runnel's libraries cannot be linked as per-library shared objects
# (cc_test's default): programs that use the public API only link
# //runtime:runnel (libruntime.so), in-tree plugins build against
# //plugins/api:kit and link //runtime:runtime_shared, and tests that use
# internal APIs set linkstatic = True.
RN_COPTS = [
    "-fvisibility=hidden",
    "-pthread",
]

RN_LINKOPTS = [
    "-pthread",
    "-lm",
]
