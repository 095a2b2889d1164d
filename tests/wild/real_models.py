#!/usr/bin/env python3
"""Real models from public PyPI packages, with ONNX Runtime's outputs.

The models are the .onnx files that these wheels ship (pinned versions and
sha256 in WHEELS; only the wheel is downloaded, with `pip download
--no-deps --require-hashes`, never installed, into .cache/wild-wheels):

  rapidocr-onnxruntime 1.4.4  PP-OCRv4 text detection and recognition, the
                              PP-OCR v2.0 angle classifier (paddle2onnx)
  rapidocr 3.10.0             PP-OCRv6 small detection and recognition
  silero-vad 6.2.3            voice activity detection: an If on the sample
                              rate around two LSTM-state subgraphs, the
                              opset-15 export (three Ifs), the If-less opset-18
                              export, and the sequence model (LSTM)
  ddddocr 1.6.1               captcha OCR (Conv + LSTM, CTC logits), its older
                              dynamically quantised twin (ConvInteger,
                              DynamicQuantizeLSTM), and a YOLOX-style detector
  magika 1.0.3                byte-sequence file-type classifier

Every model whose inputs are dynamic gets two data sets of different shapes
(test_data_set_0 and _1), which the conformance runner feeds to one compiled
model in turn: the second re-specialises the plan for new shapes. The inputs
are realistic: text rendered with Pillow's built-in font and normalised as
each package's own pre-processing does, a speech-like waveform (a glottal
pulse train through formant resonators, in syllables, with breath noise) at
16 and 8 kHz, and the real bytes of files for magika. The outputs are what
ONNX Runtime's CPU provider computes at f32 (graph optimisations off).

Each case may carry a file `tolerance` ("rtol R atol A" and a reason) where
a model amplifies ONNX Runtime's rounding (or REF's) more than the suite's
default allows: the conformance runner reads it for that case.

  real_models.py OUT [CASE_PREFIX ...]     (also called by make_models.py)
"""
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
WHEELS_DIR = os.path.normpath(os.path.join(HERE, "../../.cache/wild-wheels"))

# (requirement, wheel file, sha256): the wheels are downloaded as they are
# on PyPI and checked against these hashes.
WHEELS = [
    ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
     "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf"),
    ("rapidocr==3.10.0", "rapidocr-3.10.0-py3-none-any.whl",
     "2fc34e26cd0f48514804a94f8832283039c7334076bff60768b1fed9ad068050"),
    ("silero-vad==6.2.3", "silero_vad-6.2.3-py3-none-any.whl",
     "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8"),
    ("ddddocr==1.6.1", "ddddocr-1.6.1-py3-none-any.whl",
     "c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935"),
    ("magika==1.0.3", "magika-1.0.3-py3-none-manylinux_2_28_x86_64.whl",
     "3e9b49134e8116ee40b431664dcbed9e199413efddcce1a173c734b4e0521529"),
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_wheels():
    """Downloads the pinned wheels once (no dependencies, hashes required)."""
    os.makedirs(WHEELS_DIR, exist_ok=True)
    missing = [w for w in WHEELS if not os.path.exists(os.path.join(WHEELS_DIR, w[1]))]
    if missing:
        req = os.path.join(WHEELS_DIR, "requirements.txt")
        with open(req, "w") as f:
            for spec, _, digest in missing:
                f.write(f"{spec} --hash=sha256:{digest}\n")
        print(f"tests/wild: downloading {len(missing)} wheels into {WHEELS_DIR}", flush=True)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--require-hashes", "--only-binary=:all:", "-r", req, "-d",
                            WHEELS_DIR])
        if r.returncode != 0:
            raise SystemExit(f"tests/wild: pip could not download {', '.join(w[0] for w in missing)}"
                             f" (exit {r.returncode}; PyPI unreachable?): put the wheels into "
                             f"{WHEELS_DIR} by hand, or run where PyPI is reachable")
    for _, name, digest in WHEELS:
        got = sha256(os.path.join(WHEELS_DIR, name))
        if got != digest:
            raise SystemExit(f"tests/wild: {name}: sha256 {got}, expected {digest}")


def wheel_member(package, member):
    """The bytes of `member` inside the wheel of `package` (its requirement's name)."""
    name = next(w[1] for w in WHEELS if w[0].split("==")[0] == package)
    with zipfile.ZipFile(os.path.join(WHEELS_DIR, name)) as z:
        return z.read(member)


# ---- inputs ----

def render_text(lines, width, height, size, background=255, ink=0, rgb=True, seed=0):
    """Text rendered with Pillow's built-in font (no system font needed), a
    little jitter and noise so that it is not a clean synthetic pattern."""
    from PIL import Image, ImageDraw, ImageFont

    r = np.random.default_rng(seed)
    img = Image.new("L", (width, height), background)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=size)
    y = max(1, (height - len(lines) * int(size * 1.25)) // 2)
    for line in lines:
        x = int(r.integers(2, max(3, width // 16)))
        draw.text((x, y), line, fill=ink, font=font)
        y += int(size * 1.25)
    a = np.asarray(img, dtype=np.float32)
    a = np.clip(a + r.normal(0, 6, a.shape), 0, 255).round()
    if rgb:
        tint = np.array([1.0, 0.97, 0.93], np.float32)
        a = np.clip(a[:, :, None] * tint, 0, 255).round()
    return a.astype(np.float32)  # HWC (or HW) in 0..255


def paddle_det(img):  # PaddleOCR DetResizeForTest + NormalizeImage (ImageNet mean/std)
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    return ((img / 255.0 - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)


def paddle_rec(img):  # PaddleOCR rec / cls: (x / 255 - 0.5) / 0.5
    return ((img / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32)


def speech(seconds, rate, seed):
    """A speech-like waveform: a glottal pulse train (pitch gliding around
    110-180 Hz) through three formant resonators whose frequencies move per
    syllable, under a syllable envelope, with pauses and breath noise."""
    r = np.random.default_rng(seed)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    f0 = 140 + 30 * np.sin(2 * np.pi * 0.7 * t) + 10 * r.standard_normal()
    phase = np.cumsum(f0 / rate)
    pulses = (np.diff(np.floor(phase), prepend=0) > 0).astype(np.float64)
    src = np.convolve(pulses, np.exp(-np.arange(40) / 6.0), mode="same")
    out = np.zeros(n)
    syll = int(0.22 * rate)
    formants = [(730, 1090, 2440), (270, 2290, 3010), (570, 840, 2410), (440, 1020, 2240)]
    for s0 in range(0, n, syll):
        seg = slice(s0, min(n, s0 + syll))
        f = formants[int(r.integers(len(formants)))]
        x = src[seg].copy()
        y = np.zeros_like(x)
        for fc in f:
            if fc >= rate / 2:
                continue
            bw = 80.0
            rr = np.exp(-np.pi * bw / rate)
            a1, a2 = 2 * rr * np.cos(2 * np.pi * fc / rate), -rr * rr
            z = np.zeros_like(x)
            for i in range(len(x)):
                z[i] = x[i] + a1 * (z[i - 1] if i else 0) + a2 * (z[i - 2] if i > 1 else 0)
            y += z
        env = np.sin(np.linspace(0, np.pi, len(y))) ** 2
        if r.random() < 0.25:  # a pause
            env *= 0.02
        out[seg] = y * env
    out = out / (np.abs(out).max() + 1e-9) * 0.6 + r.normal(0, 0.004, n)
    return out.astype(np.float32)


def magika_features(data, beg=1024, end=1024, pad=256):
    """magika's features: the first and last bytes after stripping whitespace,
    padded with the padding token (config.min.json: beg_size 1024, mid_size 0,
    end_size 1024, padding_token 256)."""
    b = data.lstrip()[:beg]
    e = data.rstrip()[-end:] if data.rstrip() else b""
    x = np.full(beg + end, pad, np.int32)
    x[:len(b)] = np.frombuffer(b, np.uint8)
    if e:
        x[beg + end - len(e):] = np.frombuffer(e, np.uint8)
    return x


# ---- cases ----

def save_case(out, name, model_bytes, data_sets, tolerance=None):
    """One case: model.onnx and one test_data_set_K per feeds dict, outputs from ONNX Runtime."""
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    with open(path, "wb") as f:
        f.write(model_bytes)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    shapes = []
    for k, feeds in enumerate(data_sets):
        ds = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(ds)
        outs = sess.run(None, {n: feeds[n] for n in names})
        for i, n in enumerate(names):
            t = numpy_helper.from_array(np.asarray(feeds[n]), n)
            open(os.path.join(ds, f"input_{i}.pb"), "wb").write(t.SerializeToString())
        for i, (o, v) in enumerate(zip(out_names, outs)):
            t = numpy_helper.from_array(np.asarray(v), o)
            open(os.path.join(ds, f"output_{i}.pb"), "wb").write(t.SerializeToString())
        shapes.append(" ".join("x".join(map(str, np.shape(feeds[n]))) or "scalar" for n in names))
    if tolerance is not None:
        rtol, atol, why = tolerance
        with open(os.path.join(d, "tolerance"), "w") as f:
            f.write(f"rtol {rtol} atol {atol}\n# {why}\n")
    print(f"{name}: inputs {' | '.join(shapes)}", flush=True)


def ocr_cases(out, wanted):
    lines = ["Total 42.50 EUR", "Invoice 2026-11-27", "runnel ONNX"]
    det_a = paddle_det(render_text(lines, 224, 96, 18, seed=1))
    det_b = paddle_det(render_text(lines[:2] + ["paid, thank you"], 160, 128, 16, seed=2))
    rec_a = paddle_rec(render_text(["Invoice 2026"], 160, 48, 26, seed=3))
    rec_b = paddle_rec(render_text(["Total 42.50 EUR paid"], 320, 48, 26, seed=4))
    cls_a = paddle_rec(render_text(["angle"], 192, 48, 28, seed=5))
    # upside down (the classifier's other class), in a batch of two
    cls_b = np.concatenate([paddle_rec(render_text(["Hello"], 96, 48, 28, seed=6)),
                            paddle_rec(render_text(["World"], 96, 48, 28, seed=7)[::-1, ::-1])])
    models = [
        ("wild_real_ppocrv4_det", "rapidocr-onnxruntime",
         "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", [det_a, det_b]),
        ("wild_real_ppocrv4_rec", "rapidocr-onnxruntime",
         "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", [rec_a, rec_b]),
        ("wild_real_ppocr_cls", "rapidocr-onnxruntime",
         "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
         [np.ascontiguousarray(cls_a), np.ascontiguousarray(cls_b)]),
        ("wild_real_ppocrv6_det_small", "rapidocr", "rapidocr/models/PP-OCRv6_det_small.onnx",
         [det_a, det_b]),
        ("wild_real_ppocrv6_rec_small", "rapidocr", "rapidocr/models/PP-OCRv6_rec_small.onnx",
         [rec_a, rec_b]),
    ]
    for name, pkg, member, xs in models:
        if wanted(name):
            save_case(out, name, wheel_member(pkg, member), [{"x": x} for x in xs])


def vad_cases(out, wanted):
    wave16 = speech(1.0, 16000, seed=11)
    wave8 = speech(1.0, 8000, seed=12)
    # silero_vad's OnnxWrapper: 512 samples at 16 kHz (256 at 8 kHz) with the
    # previous 64 (32) as context; state [2, batch, 128]
    def chunk(wave, start, n, ctx, batch):
        rows = [wave[start + 4 * n * b - ctx: start + 4 * n * b + n] for b in range(batch)]
        return np.stack(rows).astype(np.float32)

    r = np.random.default_rng(13)
    state = lambda b: (r.standard_normal((2, b, 128)) * 0.3).astype(np.float32)  # noqa: E731
    sr16, sr8 = np.array(16000, np.int64), np.array(8000, np.int64)
    feeds = [{"input": chunk(wave16, 1024, 512, 64, 1), "state": state(1), "sr": sr16},
             {"input": chunk(wave8, 512, 256, 32, 2), "state": state(2), "sr": sr8}]
    for name, member in (("wild_real_silero_vad", "silero_vad/data/silero_vad.onnx"),
                         ("wild_real_silero_vad_op18_ifless",
                          "silero_vad/data/silero_vad_op18_ifless.onnx")):
        if wanted(name):
            save_case(out, name, wheel_member("silero-vad", member), feeds)
    if wanted("wild_real_silero_vad_16k_op15"):
        # 16 kHz only; a batch of 1 then of 3
        save_case(out, "wild_real_silero_vad_16k_op15",
                  wheel_member("silero-vad", "silero_vad/data/silero_vad_16k_op15.onnx"),
                  [{"input": chunk(wave16, 2048, 512, 64, 1), "state": state(1), "sr": sr16},
                   {"input": chunk(wave16, 4096, 512, 64, 3), "state": state(3), "sr": sr16}])
    if wanted("wild_real_silero_vad_16k_sequence"):
        # a sequence of 576-sample windows (512 hop + 64 context), h and c of the LSTM
        def windows(start, count):
            return np.stack([wave16[start + k * 512: start + k * 512 + 576]
                             for k in range(count)]).astype(np.float32)
        hc = lambda: (r.standard_normal((1, 1, 128)) * 0.3).astype(np.float32)  # noqa: E731
        save_case(out, "wild_real_silero_vad_16k_sequence",
                  wheel_member("silero-vad", "silero_vad/data/silero_vad_16k_sequence.onnx"),
                  [{"input": windows(0, 3), "h": hc(), "c": hc()},
                   {"input": windows(4000, 8), "h": hc(), "c": hc()}])


def ddddocr_cases(out, wanted):
    def captcha(text, width, seed):
        # ddddocr's OCR pre-processing: height 64, grey, / 255
        r = np.random.default_rng(seed)
        a = render_text([text], width, 64, 40, background=235, ink=40, rgb=False, seed=seed)
        yy, xx = np.mgrid[0:64, 0:width]  # a captcha's interference curve
        curve = np.abs(yy - (32 + 14 * np.sin(xx / (9 + 4 * r.random())))) < 1.5
        a[curve] = 60
        return (a / 255.0)[None, None].astype(np.float32)

    caps = [captcha("x7Kp2", 160, 21), captcha("mQ4r9tZ", 224, 22)]
    for name, member in (("wild_real_ddddocr_common", "ddddocr/common.onnx"),
                         ("wild_real_ddddocr_common_old", "ddddocr/common_old.onnx")):
        if wanted(name):
            save_case(out, name, wheel_member("ddddocr", member), [{"input1": c} for c in caps])
    if wanted("wild_real_ddddocr_det"):
        # the detector's input is fixed at 416x416: a click captcha's picture
        # letterboxed with 114 as ddddocr's preproc does, pixel values 0..255, CHW
        img = render_text(["A", "", "fish", "", "  tree"], 416, 300, 60, background=200, ink=20,
                          seed=23)
        pad = np.full((416, 416, 3), 114, np.float32)
        pad[:300] = img
        save_case(out, "wild_real_ddddocr_det", wheel_member("ddddocr", "ddddocr/common_det.onnx"),
                  [{"images": pad.transpose(2, 0, 1)[None].copy()}])


def magika_cases(out, wanted):
    if not wanted("wild_real_magika"):
        return
    files = [wheel_member("magika", "magika/models/standard_v3_3/config.min.json"),
             wheel_member("magika", "magika/__init__.py"),
             wheel_member("magika", "magika/models/standard_v3_3/README.md")]
    onnx_head = wheel_member("magika", "magika/models/standard_v3_3/model.onnx")[:8192]
    a = np.stack([magika_features(files[0])])
    b = np.stack([magika_features(files[1]), magika_features(files[2]),
                  magika_features(onnx_head)])
    # Its LayerNorms compute the variance in one pass, mean(x^2) - mean(x)^2
    # (jax2tf), which cancels. The first LayerNorm's ReduceSum over 512 terms:
    # ONNX Runtime's f32 sum is 4.3e-4 from the exact (float64) sum of its
    # own input, REF's (which accumulates in double) 1.4e-5; the cancellation
    # makes that 2e-5 in the variance and 2e-4 after Reciprocal(Sqrt)
    # (measured node by node on data set 0). The reference is the less exact
    # side here.
    save_case(out, "wild_real_magika",
              wheel_member("magika", "magika/models/standard_v3_3/model.onnx"),
              [{"bytes": a}, {"bytes": b}],
              tolerance=(1e-3, 1e-5, "one-pass LayerNorm variance amplifies ORT's f32 summation"))


def cases(out, only=()):
    def wanted(name):
        return not only or any(name.startswith(p) for p in only)

    if only and not any(p.startswith("wild_real") or "wild_real".startswith(p) for p in only):
        return
    fetch_wheels()
    ocr_cases(out, wanted)
    vad_cases(out, wanted)
    ddddocr_cases(out, wanted)
    magika_cases(out, wanted)


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    cases(sys.argv[1], sys.argv[2:])
