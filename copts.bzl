"""Shared compiler options. The warning set and -std=c17 live in .bazelrc."""

RN_COPTS = [
    "-fvisibility=default",
    "-pthread",
]

RN_LINKOPTS = [
    "-pthread",
    "-lm",
]
