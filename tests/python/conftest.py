"""Shared fixtures. Random inputs are fresh each run; the seed is printed (shown on failure) and can be
fixed with MXATTN_TEST_SEED=<int> to replay a run."""
import os
import pathlib
import secrets
import sys

import numpy as np
import pytest

# The module builds into python/mxattn; make it importable without PYTHONPATH too.
_PYTHON_DIR = pathlib.Path(__file__).resolve().parents[2] / "python"
if str(_PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(_PYTHON_DIR))


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("MXATTN_TEST_SEED", secrets.randbits(32)))
    print(f"{request.node.nodeid}: MXATTN_TEST_SEED={seed}")
    return np.random.default_rng(seed)

