"""`pip wheel .` (pyproject.toml, scikit-build-core over the project's CMake): the wheel builds, holds the
package, installs, and imports from outside the source tree.

CPU-only here (--config-settings=cmake.define.MXATTN_CUDA=OFF: minutes less on a machine with nvcc; with
nvcc the same build compiles the CUDA kernels into the module, which the H200 ran tests/gpu/test_torch_api.py
against). No build isolation: the build requirements (scikit-build-core, nanobind) come from the test
environment (python/requirements-test.txt), so nothing is downloaded here; `--config-settings`, not `-C`,
which Debian 12's pip 23.0 lacks.
"""
import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytest.importorskip("scikit_build_core")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                          "-w", str(out), "--config-settings=cmake.define.MXATTN_CUDA=OFF",
                          f"--config-settings=build-dir={out / 'build'}"],
                         capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, f"pip wheel failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    wheels = list(out.glob("mxattn-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_holds_the_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("__init__.py", "_tensor.py", "_attention.py", "_ops.py", "py.typed"):
        assert f"mxattn/{f}" in names, f
    assert any(n.startswith("mxattn/_mxattn.") and n.endswith(".so") for n in names), sorted(names)
    assert not any(n.startswith(("tests/", "src/", "include/")) for n in names)


def test_installed_wheel_imports_and_quantizes(wheel, tmp_path):
    target = tmp_path / "site"
    run = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target),
                          str(wheel)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    code = (
        "import numpy as np, mxattn\n"
        "assert mxattn.__file__.startswith(%r), mxattn.__file__\n"
        "x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)\n"
        "t = mxattn.quantize(x, 'mxfp4', layout='tiled')\n"
        "y = t.dequantize()\n"
        "assert y.shape == x.shape and np.abs(y - x).max() < 1.5 * np.abs(x).max() / 4\n"
        "assert not hasattr(mxattn, 'gpu')\n"
        "print(mxattn.__version__, t)\n" % str(target))
    # From an empty directory, with only the installed package on the path (not the source tree's python/).
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "MXTensor(format='mxfp4', shape=(4, 64)" in run.stdout
