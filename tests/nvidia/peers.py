"""The NVIDIA device's peers on the GPU machine, measured in the same run as
nvidia_check's benchmarks (scripts/nvidia-harness bench): PyTorch eager and
torch.compile (inductor) on the models tests/nvidia/export_models.py exports
(torchvision's ResNet-50, a BERT-base encoder called with inputs_embeds),
measured the way nvidia_check measures runnel: the median of 50 synchronous
runs after 10 warm-up runs, a host (numpy, f32) array in and a host f32 array
out, at batch 1 and 32, f32 (TF32 off, as runnel's default) and f16, and at
batch 32 in bf16 (nvidia_check's bf16 rows).

    python3 tests/nvidia/peers.py [--compile-budget SECONDS] [--compile-mode MODE]

PyTorch's BERT uses its default attention (scaled_dot_product_attention, the
fused kernels) for the peer, as a user would. torch.compile runs only at
batch 32 f16 (its compile takes minutes); each compile is bounded by
--compile-budget (default 150 s) and reported as skipped past it. Prints one
line per configuration:

    peer MODEL batch=B PRECISION eager median=X ms | compile(MODE) median=Y ms
"""
import argparse
import signal
import statistics
import sys
import time

import numpy as np
import torch


def make(name, batch):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "tv_resnet50":
        import torchvision
        m = torchvision.models.resnet50(weights=None).eval()
        x = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
        return m, x, lambda mod, t: mod(t)
    from transformers import BertConfig, BertModel
    m = BertModel(BertConfig(), add_pooling_layer=False).eval()
    x = rng.standard_normal((batch, 128, 768)).astype(np.float32)
    return m, x, lambda mod, t: mod(inputs_embeds=t).last_hidden_state


def timed(fn, x, dtype):
    def once():
        t = torch.from_numpy(x).to("cuda", non_blocking=False).to(dtype)
        y = fn(t)
        return y.float().cpu().numpy()

    with torch.inference_mode():
        for _ in range(10):
            once()
        times = []
        for _ in range(50):
            t0 = time.perf_counter()
            once()
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


class Budget(Exception):
    pass


def alarm(_signum, _frame):
    raise Budget()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-budget", type=float, default=150.0)
    ap.add_argument("--compile-mode", default="default")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("peer: SKIP no CUDA device for PyTorch")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    print(f"peer: PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}, "
          f"cuDNN {torch.backends.cudnn.version()}", flush=True)
    signal.signal(signal.SIGALRM, alarm)
    for name in ["tv_resnet50", "bert_encoder"]:
        if args.only and args.only != name:
            continue
        for precision in ["f32", "f16", "bf16"]:
            for batch in [1, 32]:
                if precision == "bf16" and (batch != 32 or not torch.cuda.is_bf16_supported()):
                    continue
                dtype = {"f16": torch.float16, "bf16": torch.bfloat16}.get(precision,
                                                                          torch.float32)
                try:
                    m, x, call = make(name, batch)
                    m = m.to("cuda", dtype)
                    eager = timed(lambda t: call(m, t), x, dtype)
                except Exception as e:  # noqa: BLE001 - report and go on
                    print(f"peer {name} batch={batch} {precision}: eager failed: {e}", flush=True)
                    continue
                line = f"peer {name} batch={batch} {precision} eager median={eager:.3f} ms"
                if batch == 32 and precision == "f16":
                    t0 = time.time()
                    signal.alarm(int(args.compile_budget))
                    try:
                        cm = torch.compile(m, mode=args.compile_mode)
                        comp = timed(lambda t: call(cm, t), x, dtype)
                        signal.alarm(0)
                        line += (f" | compile({args.compile_mode}) median={comp:.3f} ms "
                                 f"(compiled and measured in {time.time() - t0:.0f} s)")
                    except Budget:
                        line += (f" | compile({args.compile_mode}): SKIP over the "
                                 f"{args.compile_budget:.0f} s budget")
                    except Exception as e:  # noqa: BLE001 - report and go on
                        signal.alarm(0)
                        line += f" | compile({args.compile_mode}) failed: {type(e).__name__}: {e}"
                print(line, flush=True)
                del m
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
