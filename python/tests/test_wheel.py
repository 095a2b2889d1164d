"""The wheel python/build-wheel makes, installed with pip into a fresh venv,
runs docs/python.md's example (the README's, in Python) away from the
sources. python/test sets RUNNEL_WHEEL."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import RELU, ROOT, need
from test_core import check_discovered, discovered

WHEEL = os.environ.get("RUNNEL_WHEEL")


def doc_example():
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "docs/python.md has no python example"
    return blocks[0]


@pytest.mark.skipif(not WHEEL, reason="RUNNEL_WHEEL is not set: python/test builds the wheel "
                    "and sets it")
def test_wheel_in_fresh_venv_runs_the_doc_example(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check", WHEEL]
    subprocess.run(pip, check=True)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(need(RELU), work / "model.onnx")
    (work / "example.py").write_text(doc_example())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RUNNEL_PLUGINS")}
    p = subprocess.run([str(venv / "bin" / "python"), "example.py"], cwd=work, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "(3, 4, 5) float32" in p.stdout, p.stdout
    # The package came from the wheel, with its libraries inside.
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import runnel, os; print(os.path.dirname(runnel.__file__))"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    installed = where.stdout.strip()
    assert installed.startswith(str(venv))
    assert os.path.exists(os.path.join(installed, "libruntime.so"))
    # The plugins and the file naming them came too: GPU and NVIDIA are found.
    assert os.path.exists(os.path.join(installed, "runnel-plugins.txt"))
    check_discovered(*discovered(str(venv / "bin" / "python"), cwd=work))
