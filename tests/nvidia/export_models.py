"""Exports real models with real exporters on the GPU machine, for the NVIDIA
harness (scripts/nvidia-harness): the machine's image has PyTorch,
torchvision, transformers, onnx and ONNX Runtime but no network, and a
ResNet-50 is too large to carry there (64 MiB in all), so the models are made
where they run.

    python3 tests/nvidia/export_models.py OUT_DIR [LIGHT_DIR]

writes, for each model that exports, OUT_DIR/NAME.onnx with a dynamic batch
dimension, NAME_input_0.pb (batch 2, seeded) and NAME_output_0.pb computed by
ONNX Runtime's CPU provider in f32 (the reference), and a line per model in
OUT_DIR/models.txt. A model that fails to export is reported and left out;
nvidia_check says it is missing.

- tv_resnet50: torchvision's ResNet-50 (random initialisation, seed 0,
  eval mode), input 2x3x224x224 ~ N(0, 1).
- bert_encoder: transformers' BertModel in the BERT-base configuration (12
  layers, hidden 768, 12 heads, random initialisation, eager attention),
  called with inputs_embeds (so the input is f32) and no attention mask,
  output last_hidden_state; input 2x128x768 ~ N(0, 1).

With LIGHT_DIR (ONNX's light models), OUT_DIR/light_peaks.txt holds, per
model, the largest |value| of any intermediate tensor in ONNX Runtime on the
input nvidia_check gives (arange(n)/n): the light models' weights are
synthetic and several reach 1e19 and more, beyond f16's 65504, so that f16
cannot run them and nvidia_check says so instead of comparing."""
import os
import sys
import time
import traceback

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper


def export(module, example, path, input_name, dynamic):
    """The TorchScript exporter (opset 17) where this PyTorch still has it,
    else the dynamo exporter."""
    try:
        torch.onnx.export(module, (example,), path, input_names=[input_name],
                          output_names=["output"], opset_version=17,
                          dynamic_axes={input_name: dynamic, "output": dynamic},
                          do_constant_folding=True, dynamo=False)
        return "torch.onnx.export (TorchScript, opset 17)"
    except Exception as e:  # noqa: BLE001 - report and try the other exporter
        print(f"export_models: TorchScript exporter failed ({e}); trying dynamo", flush=True)
    batch = torch.export.Dim("batch", min=1, max=1024)
    prog = torch.onnx.export(module, (example,), dynamo=True, input_names=[input_name],
                             output_names=["output"],
                             dynamic_shapes={"x": {0: batch}}, optimize=True)
    prog.save(path)
    return "torch.onnx.export (dynamo)"


class Encoder(torch.nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, x):
        return self.bert(inputs_embeds=x).last_hidden_state


class Image(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)


def make(name):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "tv_resnet50":
        import torchvision
        module = Image(torchvision.models.resnet50(weights=None).eval())
        x = rng.standard_normal((2, 3, 224, 224)).astype(np.float32)
        return module, x, "input", {0: "batch"}
    if name == "bert_encoder":
        from transformers import BertConfig, BertModel
        cfg = BertConfig()  # BERT-base
        try:  # the attention as matrix products (the default is PyTorch's SDPA)
            cfg._attn_implementation = "eager"
        except Exception:  # noqa: BLE001 - a transformers without the setting
            pass
        bert = BertModel(cfg, add_pooling_layer=False).eval()
        x = rng.standard_normal((2, 128, cfg.hidden_size)).astype(np.float32)
        return Encoder(bert), x, "inputs_embeds", {0: "batch"}
    raise ValueError(name)


def light_peaks(light, out):
    lines = []
    for f in sorted(os.listdir(light)):
        if not (f.startswith("light_") and f.endswith(".onnx")):
            continue
        m = onnx.load(os.path.join(light, f))
        inits = {i.name for i in m.graph.initializer}
        inp = [i for i in m.graph.input if i.name not in inits][0]
        dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        n = int(np.prod(dims))
        x = (np.arange(n, dtype=np.float32) / n).reshape(dims)
        names = [o for node in m.graph.node for o in node.output if o]
        del m.graph.output[:]
        m.graph.output.extend(onnx.helper.make_empty_tensor_value_info(o) for o in names)
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        peak = max(float(np.abs(v).max()) for v in sess.run(None, {inp.name: x})
                   if isinstance(v, np.ndarray) and v.dtype == np.float32 and v.size)
        lines.append(f"{f[len('light_'):-len('.onnx')]} {peak:.6g}\n")
    with open(os.path.join(out, "light_peaks.txt"), "w") as fh:
        fh.write("".join(lines))
    print("export_models: light models' largest intermediate |value| (ONNX Runtime): "
          + ", ".join(l.strip() for l in lines), flush=True)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if len(sys.argv) > 2:
        try:
            light_peaks(sys.argv[2], out)
        except Exception:  # noqa: BLE001 - the exports still run
            traceback.print_exc()
    done = []
    for name in ["tv_resnet50", "bert_encoder"]:
        t0 = time.time()
        try:
            module, x, input_name, dynamic = make(name)
            path = os.path.join(out, name + ".onnx")
            with torch.no_grad():
                how = export(module, torch.from_numpy(x), path, input_name, dynamic)
            model = onnx.load(path)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            feed = {sess.get_inputs()[0].name: x}
            y = sess.run(None, feed)[0].astype(np.float32)
            with open(os.path.join(out, name + "_input_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(x).SerializeToString())
            with open(os.path.join(out, name + "_output_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(y).SerializeToString())
            ops = sorted({n.op_type for n in model.graph.node})
            print(f"export_models: {name}: {how}, opset "
                  f"{model.opset_import[0].version}, {len(model.graph.node)} nodes, ops {ops}; "
                  f"reference by ONNX Runtime {ort.__version__}, |y| max {np.abs(y).max():.3g}, "
                  f"{time.time() - t0:.1f} s", flush=True)
            done.append(name)
        except Exception:  # noqa: BLE001 - one model failing leaves the others
            print(f"export_models: {name} failed:", flush=True)
            traceback.print_exc()
    with open(os.path.join(out, "models.txt"), "w") as f:
        f.write("".join(n + "\n" for n in done))
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
