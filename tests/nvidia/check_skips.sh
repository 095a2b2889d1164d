#!/usr/bin/env bash
# The harness's test program on a machine without a usable GPU: it starts,
# reports the device absent with create's reason, and exits 77 (0 with
# --allow-skip), so that a GPU run that finds no device does not pass.
set -uo pipefail
check="tests/nvidia/nvidia_check"
plugin="plugins/nvidia/libnvidia.so"
models=".cache/onnx-1.22.0/light"
out="$("$check" --plugin "$plugin" --models "$models" 2>&1)"
rc=$?
echo "$out"
if echo "$out" | grep -q "^PASS\|^FAIL"; then
    echo "a CUDA device is present: the harness ran its checks (exit $rc); nothing to test here"
    exit 0
fi
fail() { echo "check_skips: $*" >&2; exit 1; }
[ "$rc" -eq 77 ] || fail "expected exit 77 when the device is absent, got $rc"
echo "$out" | grep -q "^SKIP NVIDIA: device NVIDIA cannot start: NVIDIA: no CUDA \(driver\|device\)" ||
    fail "the skip does not give create's reason"
echo "$out" | grep -q "^0 passed, 0 failed" || fail "no 'N passed, N failed' line"
"$check" --plugin "$plugin" --models "$models" --allow-skip >/dev/null 2>&1 ||
    fail "--allow-skip did not exit 0"
"$check" --no-such-flag >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad flag is not exit 2"
echo "check_skips: ok"
