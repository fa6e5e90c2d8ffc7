"""The sm_120a code the default build compiles holds the block-scaled MMA instructions (no GPU needed): the
objects of src/kernels/*sm120*.cu, disassembled with cuobjdump and the nvdisasm it calls
(python/requirements-test.txt installs both from PyPI: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm; the CUDA
toolkit's own where it has them). ctest passes the objects in
MXATTN_SM120_OBJECTS (':'-separated); a build without sm_120a code (no nvcc, nvcc before 12.8, MXATTN_SM120=OFF)
leaves it empty and the test is skipped with that reason."""
import glob
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

OBJECTS = [p for p in os.environ.get("MXATTN_SM120_OBJECTS", "").split(":") if p]

# What each sm_120a object must hold: the probe's families (ptx/mma_block_scale.h's wrappers: each element against
# itself, E4M3 against each, kind::mxf4nvf4 2X and 4X) and the prefill kernel's S = Q K^T (the element's own) and
# O += P V (P in E4M3) for each element it takes; and what it must not: the prefill kernel feeds every format to
# the block-scaled instructions, none through BF16 (HMMA).
ELEMENTS = ["E4M3", "E5M2", "E2M3", "E3M2", "E2M1"]
EXPECTED = {
    "probe_sm120": [f"QMMA.SF.16832.F32.{e}.{e}.E8" for e in ELEMENTS] +
                   [f"QMMA.SF.16832.F32.E4M3.{e}.E8" for e in ELEMENTS] +
                   ["OMMA.SF.16864.F32.E2M1.E2M1.E8",         # kind::mxf4nvf4, packed E2M1, UE8M0 2X
                    "OMMA.SF.16864.F32.E2M1.E2M1.UE4M3.4X"],  # NVFP4: UE4M3 4X
    # S of the one-a-byte elements, P (E4M3) V of every element (NVFP4's V folded to E4M3); MXFP4's and NVFP4's
    # S on packed E2M1.
    "attention_prefill_sm120": [f"QMMA.SF.16832.F32.{e}.{e}.E8" for e in ELEMENTS if e != "E2M1"] +
                               [f"QMMA.SF.16832.F32.E4M3.{e}.E8" for e in ELEMENTS] +
                               ["OMMA.SF.16864.F32.E2M1.E2M1.E8", "OMMA.SF.16864.F32.E2M1.E2M1.UE4M3.4X"],
}
ABSENT = {"attention_prefill_sm120": ["HMMA"]}


def cuobjdump():
    """The venv's (nvidia-cuda-cuobjdump puts it under site-packages/nvidia/cu*/bin), else one on PATH."""
    for site in sys.path:
        hits = sorted(glob.glob(os.path.join(site or ".", "nvidia", "cu*", "bin", "cuobjdump")))
        if hits:
            return hits[-1]
    return shutil.which("cuobjdump")


@pytest.mark.skipif(not OBJECTS, reason="this build compiles no sm_120a code (MXATTN_SM120_OBJECTS is empty)")
def test_sm120_objects_hold_the_block_scaled_mma():
    tool = cuobjdump()
    assert tool, "no cuobjdump: pip install -r python/requirements-test.txt (nvidia-cuda-cuobjdump)"
    env = dict(os.environ, PATH=os.path.dirname(tool) + os.pathsep + os.environ.get("PATH", ""))  # its nvdisasm
    found = set()
    for obj in OBJECTS:
        assert pathlib.Path(obj).exists(), obj
        r = subprocess.run([tool, "-sass", obj], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        assert "arch = sm_120a" in r.stdout, obj
        name = pathlib.Path(obj).name.split(".")[0]
        for instruction in EXPECTED.get(name, []):
            assert instruction in r.stdout, f"{instruction} not in the sm_120a SASS of {obj}"
        for instruction in ABSENT.get(name, []):
            assert instruction not in r.stdout, f"{instruction} in the sm_120a SASS of {obj}"
        found.add(name)
    assert found == set(EXPECTED), f"sm_120a objects {sorted(found)}, expected {sorted(EXPECTED)}"
