"""The command line's conventions, on any machine (no GPU needed): --help of every command exits 0 with
its usage; a malformed or out-of-range number, an unknown option or command is an error that names it
(exit 2); `bench` without a GPU says so. Runs the binary in MXATTN_CLI (ctest's python_tests sets it)."""
import os
import pathlib
import shutil
import subprocess

import pytest

CLI = os.environ.get("MXATTN_CLI")
pytestmark = pytest.mark.skipif(
    not CLI, reason="MXATTN_CLI is not set: point it at a built mxattn (ctest's python_tests does)"
)

COMMANDS = [[], ["formats"], ["demo"], ["explore"], ["bench"], ["bench", "quantize"], ["bench", "attention"],
            ["probe"]]


def mxattn(*args, timeout=120):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)


def gpu_present():
    """A GPU the CLI could use: `nvidia-smi -L` lists one, or the driver made a device node."""
    if pathlib.Path("/dev/nvidia0").exists():
        return True
    if shutil.which("nvidia-smi") is None:
        return False
    r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return r.returncode == 0 and "GPU" in r.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "mxattn")
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_exits_0(command, flag):
    r = mxattn(*command, flag)
    assert r.returncode == 0, r.stderr
    assert "Usage: " + " ".join(["mxattn", *command]) in r.stdout, r.stdout
    assert r.stderr == ""


def test_help_lists_options():
    assert "--seed S" in mxattn("demo", "--help").stdout
    explore = mxattn("explore", "--help").stdout
    for text in ("--smooth", "--max-kv-heads", "--no-files", "Pareto frontier", "FORMAT"):
        assert text in explore, text
    assert "--sizes" in mxattn("bench", "quantize", "--help").stdout
    assert "--decode-lens" in mxattn("bench", "attention", "--help").stdout
    top = mxattn("--help").stdout
    for command in ("formats", "demo", "explore", "bench", "probe"):
        assert command in top, command


def test_no_command_prints_usage_and_exits_2():
    r = mxattn()
    assert r.returncode == 2
    assert "Usage: mxattn" in r.stderr


@pytest.mark.parametrize(
    "args,option,value",
    [
        (["demo", "--seed", "abc"], "--seed", "abc"),
        (["demo", "--seed", "-1"], "--seed", "-1"),
        (["demo", "--seed", "99999999999999999999"], "--seed", "99999999999999999999"),
        (["demo", "--seq", "0"], "--seq", "0"),
        (["demo", "--seq", "-5"], "--seq", "-5"),
        (["demo", "--dim", "1.5"], "--dim", "1.5"),
        (["demo", "--heads", "2x"], "--heads", "2x"),
        (["explore", "--seq", "0"], "--seq", "0"),
        (["explore", "--threads", "-2"], "--threads", "-2"),
        (["explore", "--seed", "x1"], "--seed", "x1"),
        (["bench", "quantize", "--runs", "0"], "--runs", "0"),
        (["bench", "quantize", "--warmup", "-1"], "--warmup", "-1"),
        (["bench", "quantize", "--sizes", "64,abc"], "--sizes", "abc"),
        (["bench", "quantize", "--sizes", "-64"], "--sizes", "-64"),
        (["bench", "attention", "--page", "-1"], "--page", "-1"),
        (["bench", "attention", "--decode-lens", "4096,0"], "--decode-lens", "0"),
        (["bench", "attention", "--runs", "3000000000"], "--runs", "3000000000"),
    ],
    ids=lambda x: " ".join(x) if isinstance(x, list) else None,
)
def test_bad_number_names_option_and_value(args, option, value):
    r = mxattn(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert option in r.stderr and f"'{value}'" in r.stderr, r.stderr


@pytest.mark.parametrize(
    "args,named",
    [
        (["demo", "--bogus"], "--bogus"),
        (["explore", "--bogus", "1"], "--bogus"),  # not "element '1'": the option comes first
        (["formats", "--bogus", "1"], "--bogus"),
        (["bench", "quantize", "--bogus"], "--bogus"),
        (["bench", "attention", "--bogus"], "--bogus"),
        (["formats", "--bogus"], "--bogus"),
        (["bogus"], "bogus"),
        (["bench", "bogus"], "bogus"),
        (["demo", "--dist", "bogus"], "bogus"),
        (["explore", "--data", "normal,bogus"], "bogus"),
        (["explore", "bogus/k32"], "bogus"),
        (["bench", "attention", "--decode-formats", "mxfp4,bogus"], "bogus"),
        (["bench", "quantize", "--formats", "e3m2/k16/ue8m0,e2m3/k15"], "e2m3/k15"),
        (["bench", "quantize", "--rows-kernel", "tiled"], "tiled"),
        (["bench", "attention", "--prefill-kernels", "hopper,bogus"], "bogus"),
        (["bench", "attention", "--prefill-causal", "maybe"], "maybe"),
        (["bench", "attention", "--prefill-q", "fp8"], "fp8"),
        (["probe", "--family", "mma.m16n8k8.tf32"], "mma.m16n8k8.tf32"),
    ],
    ids=lambda x: " ".join(x) if isinstance(x, list) else None,
)
def test_unknown_option_or_name_is_named(args, named):
    r = mxattn(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert named in r.stderr, r.stderr


def test_seed_is_the_one_given():
    r = mxattn("demo", "--seq", "64", "--dim", "64", "--seed", "7")
    assert r.returncode == 0, r.stderr
    assert "seed 7," in r.stdout


def test_options_keep_their_defaults():
    r = mxattn("demo", "--seq", "64", "--dim", "64", "--seed=1")
    assert r.returncode == 0, r.stderr
    assert "B=1 S=64 H=2 D=64, inputs N(0,1), seed 1, rule rceil" in r.stdout


def test_explore_model_only():
    r = mxattn("explore", "--model-only", "mxfp4", "nvfp4")
    assert r.returncode == 0, r.stderr
    assert "mxfp4" in r.stdout and "nvfp4" in r.stdout


@pytest.mark.skipif(gpu_present(), reason="a GPU is present: `bench quantize` would run the benchmark")
@pytest.mark.parametrize("bench", ["quantize", "attention"])
def test_bench_without_gpu_says_so(bench):
    r = mxattn("bench", bench, timeout=60)
    assert r.returncode != 0
    assert r.stderr.startswith(f"mxattn bench {bench}: no CUDA GPU"), r.stderr


def test_probe_cpu_model_checks_the_probe(tmp_path):
    r = mxattn("probe", "--cpu-model", "--family", "mma.m16n8k16.bf16,wgmma.m64n64k32.e4m3.ss", "--svg", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 families probed: every measured map is the library's, every D the model's" in r.stdout, r.stdout
    assert "values: 64 draws of random codes; largest |D - model| / sum |products|" in r.stdout
    assert "A (16 x 16, registers): lane" in r.stdout
    assert "(--full prints every row and column)" in r.stdout  # the wgmma grids are cut
    for name in ("mma.m16n8k16.bf16", "wgmma.m64n64k32.e4m3.ss"):
        assert (tmp_path / f"{name}.svg").read_text().startswith("<svg")


@pytest.mark.skipif(gpu_present(), reason="a GPU is present: `probe` would run on it")
def test_probe_without_gpu_says_so():
    r = mxattn("probe")
    assert r.returncode == 1
    assert r.stderr.startswith("mxattn probe: no CUDA GPU can be used"), r.stderr


@pytest.mark.skipif(gpu_present(), reason="a GPU is present: the demo runs its GPU half there")
def test_demo_runs_on_the_cpu_without_gpu():
    r = mxattn("demo", "--seq", "64", "--dim", "64", "--seed", "1")
    assert r.returncode == 0, r.stderr
    assert "GPU: " in r.stdout and "CPU reference" in r.stdout
