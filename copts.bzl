"""Shared compiler options. The warning set and -std=c17 live in .bazelrc."""

# Symbols are hidden unless declared RN_API (include/runnel/api.h): a shared
# object built from runnel's code exports the public API and the plugin ABI
# only (tests/runtime:test_exports checks it). So runnel's libraries cannot be
# linked as per-library shared objects (cc_test's default): programs that use
# the public API only link //runtime:runnel (libruntime.so), and tests and
# plugins that use internal APIs set linkstatic = True.
RN_COPTS = [
    "-fvisibility=hidden",
    "-pthread",
]

RN_LINKOPTS = [
    "-pthread",
    "-lm",
]
