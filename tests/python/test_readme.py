"""Every fenced code block of README.md runs here, so that the documentation cannot drift from the code.

  ```python   executed in a fresh namespace (tracebacks give README.md line numbers);
  ```sh       every command is `build/mxattn ...`, run as $MXATTN_CLI (ctest sets it) in a temporary
              directory that holds q.npy, k.npy, v.npy for the examples that read tensors.

A block that cannot run everywhere says why in an HTML comment on the line before its fence:

  <!-- test: gpu -->        needs a GPU: runs with MXATTN_README_GPU=1 (scripts/device_check.sh), else skipped
  <!-- test: slow -->       runs with MXATTN_SLOW_TESTS=1
  <!-- test: setup (...) -->         the README's set-up commands, run by .ci/run and scripts/fresh_check.sh
  <!-- test: device-check (...) -->  the GPU machine's run, which runs this file itself
  <!-- test: package (...) -->       `pip install .` / `pip wheel .`, which tests/python/test_package.py runs

Kinds combine (`gpu slow`). A block without a marker that is not python or a `build/mxattn` command fails.
"""
import os
import pathlib
import re
import shlex
import subprocess
from dataclasses import dataclass

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
KINDS = {"gpu", "slow", "setup", "device-check", "package"}
MARKER = re.compile(r"<!--\s*test:\s*(?P<kinds>[a-z -]+?)\s*(\(.*\))?\s*-->")  # (...): the reason, for readers
FENCE = re.compile(r"^ {0,3}```\s*(?P<lang>[^\s`]*)")  # any fence, info string or not: none goes unseen
CLI_TIMEOUT_S = 600


@dataclass
class Block:
    line: int  # of the first line of code, 1-based
    lang: str
    code: str
    kinds: frozenset

    @property
    def id(self):
        return f"README.md:{self.line}-{self.lang or 'plain'}" + "".join(f"-{k}" for k in sorted(self.kinds))


def readme_blocks(text):
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.fullmatch(before.strip())
        kinds = frozenset(marker["kinds"].split()) if marker else frozenset()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].lstrip().startswith("```")), None)
        assert end is not None, f"README.md:{i + 1}: code block without a closing fence"
        blocks.append(Block(i + 2, fence["lang"], "\n".join(lines[i + 1:end]) + "\n", kinds))
        i = end + 1
    return blocks


BLOCKS = readme_blocks(README.read_text())


def commands(block):
    """The commands of a shell block, comments and continuation-comment lines dropped."""
    for n, line in enumerate(block.code.splitlines()):
        words = shlex.split(line, comments=True)
        if words:
            yield block.line + n, words


def gate(block):
    """Skip a gpu/slow block unless its environment switch is on; fail on a kind this file does not know."""
    unknown = block.kinds - KINDS
    assert not unknown, f"{block.id}: unknown marker kind(s) {sorted(unknown)}; known: {sorted(KINDS)}"
    if "slow" in block.kinds and os.environ.get("MXATTN_SLOW_TESTS") != "1":
        pytest.skip("slow: set MXATTN_SLOW_TESTS=1")
    if "gpu" in block.kinds and os.environ.get("MXATTN_README_GPU") != "1":
        pytest.skip("needs a GPU: set MXATTN_README_GPU=1 (scripts/device_check.sh does)")


def cli_path():
    cli = os.environ.get("MXATTN_CLI") or str(ROOT / "build" / "mxattn")
    if not os.access(cli, os.X_OK):
        pytest.skip(f"no CLI at {cli}: set MXATTN_CLI (ctest does)")
    return cli


def test_readme_has_blocks():
    langs = {b.lang for b in BLOCKS}
    assert {"python", "sh"} <= langs, f"README.md: expected python and sh blocks, found {sorted(langs)}"


def test_gpu_submodule_is_exposed():
    """A CUDA build has mxattn.gpu (the README's GPU example), importable as a submodule too."""
    import mxattn

    compiled = getattr(mxattn._mxattn, "gpu", None)
    assert getattr(mxattn, "gpu", None) is compiled
    if compiled is not None:
        import mxattn.gpu

        assert mxattn.gpu.quantize is compiled.quantize
        assert "gpu" in mxattn.__all__


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "python"], ids=lambda b: b.id)
def test_python_block(block):
    gate(block)
    if "gpu" in block.kinds:
        torch = pytest.importorskip("torch", reason="MXATTN_README_GPU=1 but no torch")
        assert torch.cuda.is_available(), f"{block.id}: MXATTN_README_GPU=1 but torch sees no CUDA device"
    # Padding keeps the README's line numbers in tracebacks.
    code = compile("\n" * (block.line - 1) + block.code, str(README), "exec")
    exec(code, {"__name__": "__readme__"})


@pytest.fixture
def cli_cwd(tmp_path):
    """A working directory with the inputs the README's commands name: small Q, K, V as .npy."""
    rng = np.random.default_rng(0)
    for name in ("q", "k", "v"):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal((256, 64)).astype(np.float32))
    return tmp_path


SHELL_LANGS = ("sh", "bash")
SHELL_BLOCKS = [b for b in BLOCKS if b.lang in SHELL_LANGS]


@pytest.mark.parametrize("block", [b for b in SHELL_BLOCKS if not b.kinds & {"setup", "device-check", "package"}],
                         ids=lambda b: b.id)
def test_cli_block(block, cli_cwd):
    gate(block)
    cli = cli_path()
    for line, words in commands(block):
        assert words[0] == "build/mxattn", (
            f"README.md:{line}: `{' '.join(words)}` is not a `build/mxattn` command; "
            "run it here, or mark the block (see this file's docstring)")
        run = subprocess.run([cli, *words[1:]], cwd=cli_cwd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
        assert run.returncode == 0, (
            f"README.md:{line}: `{' '.join(words)}` exited {run.returncode}\n"
            f"stdout (tail):\n{run.stdout[-3000:]}\nstderr (tail):\n{run.stderr[-3000:]}")
        assert run.stdout.strip(), f"README.md:{line}: `{' '.join(words)}` printed nothing"


@pytest.mark.parametrize("block", [b for b in SHELL_BLOCKS if b.kinds & {"setup", "device-check"}], ids=lambda b: b.id)
def test_scripts_block(block):
    """Blocks run elsewhere: their scripts exist, and what runs them runs the same commands."""
    gate(block)
    cmds = [(line, " ".join(words)) for line, words in commands(block)]
    for line, cmd in cmds:
        assert re.fullmatch(r"bash \S+\.sh", cmd), f"README.md:{line}: expected `bash scripts/NAME.sh`, not `{cmd}`"
        assert (ROOT / cmd.split()[1]).is_file(), f"README.md:{line}: {cmd.split()[1]} does not exist"
    if "setup" in block.kinds:
        fresh_check = (ROOT / "scripts/fresh_check.sh").read_text()
        for line, cmd in cmds:
            assert cmd in fresh_check, f"README.md:{line}: scripts/fresh_check.sh does not run `{cmd}`"
        assert any(cmd in (ROOT / ".ci/run").read_text() for _, cmd in cmds), (
            ".ci/run runs none of the README's set-up commands")
    if "device-check" in block.kinds:
        assert "test_readme.py" in (ROOT / "scripts/device_check.sh").read_text(), (
            "scripts/device_check.sh does not run tests/python/test_readme.py (the README's GPU blocks)")


@pytest.mark.parametrize("block", [b for b in SHELL_BLOCKS if "package" in b.kinds], ids=lambda b: b.id)
def test_package_block(block):
    """The package's install commands: pip on the source tree, as tests/python/test_package.py builds it."""
    test = (ROOT / "tests/python/test_package.py").read_text()
    for line, words in commands(block):
        assert words[:2] in (["pip", "install"], ["pip", "wheel"]) and words[2:] == ["."], (
            f"README.md:{line}: expected `pip install .` or `pip wheel .`, not `{' '.join(words)}`")
        assert '"pip", "wheel", str(ROOT)' in test, "tests/python/test_package.py no longer builds the wheel"


def test_every_block_is_run_or_marked():
    """A block in another language, or one with an unknown marker, fails here rather than going untested."""
    for b in BLOCKS:
        assert not b.kinds - KINDS, f"{b.id}: unknown marker kind(s) {sorted(b.kinds - KINDS)}"
        assert b.lang == "python" or b.lang in SHELL_LANGS, (
            f"{b.id}: a ```{b.lang} block is neither run nor marked (see tests/python/test_readme.py)")
