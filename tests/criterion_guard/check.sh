#!/usr/bin/env bash
# Usage: check.sh NO_TEST_BINARY ONE_TEST_BINARY
# The first must fail saying no test ran; the second must pass having run
# exactly one test.
set -u
no_test="$1"
one_test="$2"
status=0

out="$("$no_test" 2>&1)"
rc=$?
if [ "$rc" -eq 0 ]; then
    echo "FAIL: a Criterion binary with no test exited 0"
    status=1
elif ! grep -q "no test ran" <<<"$out"; then
    echo "FAIL: the binary with no test failed without saying why: $out"
    status=1
else
    echo "ok: a binary with no test fails (exit $rc)"
fi

out="$("$one_test" 2>&1)"
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "FAIL: a binary with one passing test exited $rc: $out"
    status=1
elif ! grep -q "Tested: 1 | Passing: 1 " <<<"$out"; then
    echo "FAIL: the test was not run: $out"
    status=1
else
    echo "ok: a binary with one test runs it"
fi
exit $status
