#!/usr/bin/env bash
# Regenerates the checked-in seeds of tests/fuzz/seeds/ (run from the
# repository root after a change of the blob format or to add seeds):
#   npy_read:    arrays written by NumPy (Debian's python3-numpy), one per
#                dtype the reader takes, of ranks 0 to 4, both header versions;
#   blob_import: blobs exported by //tools:compile from libonnx-testdata models.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"
seeds=tests/fuzz/seeds

rm -f "$seeds"/npy_read/*.npy
/usr/bin/python3 - "$seeds/npy_read" <<'PY'
import sys, numpy as np, numpy.lib.format as fmt
out = sys.argv[1]
shapes = [(), (3,), (2, 3), (1, 2, 2), (1, 1, 2, 3)]
for i, dt in enumerate(["<f4", "<f8", "<f2", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "|b1"]):
    shape = shapes[i % len(shapes)]
    a = (np.arange(int(np.prod(shape))) % 3).astype(dt).reshape(shape)
    np.save(f"{out}/{dt[1:]}_r{len(shape)}.npy", a)
# Header version 2.0 and a Fortran-order array (refused by the reader).
with open(f"{out}/f4_v2.npy", "wb") as f:
    fmt.write_array(f, np.ones((2, 2), "<f4"), version=(2, 0))
np.save(f"{out}/f4_fortran.npy", np.asfortranarray(np.ones((2, 3), "<f4")))
PY

bazel build //tools:compile
compile="$(bazel info bazel-bin)/tools/compile"
deb=/usr/share/libonnx-testdata/data
rm -f "$seeds"/blob_import/*.blob
for model in node/test_add node/test_conv_with_strides_padding node/test_gemm_default_matrix_bias \
    node/test_if node/test_loop11 node/test_relu simple/test_sequence_model1; do
    "$compile" -m "$deb/$model/model.onnx" -d REF -o "$seeds/blob_import/$(basename "$model").blob" \
        >/dev/null
done
ls -l "$seeds"/npy_read "$seeds"/blob_import
