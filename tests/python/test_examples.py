"""The Python examples, against the C++ ones; multi-process jobs from Python;
Ctrl-C; and the check that the suite called every binding."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import BINDINGS, BUILD, CALLED, DATA_DIR, ROOT, env, run

PYTHON = sys.executable
MNIST_PY = os.path.join(ROOT, "examples", "python", "mnist.py")
FLAGS = ["--steps", "30", "--eval_every", "5", "--batch_size", "40", "--hidden", "64",
         "--loss_digits", "17"]
LINE = re.compile(r"^(?:\[\d+\] )?((?:step \d+ loss \S+)|(?:test accuracy: \S+ over \d+ images))$",
                  re.M)

needs_data = pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason="dataset-fashion-mnist missing")


def lines(output, rank=None):
    if rank is not None:
        output = "\n".join(l[len(f"[{rank}] "):] for l in output.splitlines()
                           if l.startswith(f"[{rank}] "))
    return LINE.findall(output)


@needs_data
@pytest.mark.parametrize("mesh,layout", [("rows:2;cols:2", "batch:rows;hidden:cols"), ("", "")])
def test_mnist_losses_are_the_cpp_examples_to_the_bit(mesh, layout):
    args = FLAGS + ["--mesh_shape", mesh, "--layout", layout]
    want = lines(run([os.path.join(BUILD, "examples", "mnist")] + args))
    got = lines(run([PYTHON, MNIST_PY, "--transport", "none"] + args))
    assert len(want) == 8 and got == want


@needs_data
def test_two_processes_from_python_are_bit_identical_to_in_process():
    args = FLAGS + ["--mesh_shape", "rows:2", "--layout", "batch:rows"]
    want = lines(run([PYTHON, MNIST_PY, "--transport", "none"] + args))
    out = run([os.path.join(BUILD, "tools", "mtf-launch"), "-n", "2", "--output", "all", "--",
               PYTHON, MNIST_PY] + args)
    assert "rank 1 of 2 processes" in out
    for rank in (0, 1):
        assert lines(out, rank) == want, out
    # Sharded input: batch over rows (2 blocks), so each rank read half a batch.
    read = re.findall(r"^\[\d\] input: this process read (\d+) of the batch's (\d+) bytes", out,
                      re.M)
    assert len(read) == 2 and all(2 * int(mine) == int(whole) for mine, whole in read), out


SHARDED = """
import sys
import numpy as np
import mtf
g = mtf.Graph()
m = mtf.Mesh(g, "mesh")
x = mtf.placeholder(m, [mtf.Dimension("batch", 8), mtf.Dimension("io", 4)], name="x")
loss = mtf.reduce_mean(mtf.square(mtf.layers.dense(x, mtf.Dimension("out", 3), name="d")))
ops = mtf.optimize.SgdOptimizer(0.05).minimize(loss)
s = mtf.Session(g, mesh_shape="all:2", layout="batch:all", reproducible=True)
begin, shape = s.local_feed_block(x)
data = np.arange(32, dtype=np.float32).reshape(8, 4) / 10
for step in range(3):
    feed = data[begin[0]:begin[0] + shape[0]] if sys.argv[1] == "sharded" else data
    out = s.run(loss, {x: feed + step}, targets=ops)
    print(f"step {step} loss {float(out):.17g} fed {s.last_fed_bytes} at {begin} {shape}")
"""


def test_sharded_feeds_from_python_train_as_whole_feeds(tmp_path):
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED)
    launch = [os.path.join(BUILD, "tools", "mtf-launch"), "-n", "2", "--output", "all", "--",
              PYTHON, str(script)]
    whole = run(launch + ["whole"])
    sharded = run(launch + ["sharded"])
    losses = lambda out: sorted(re.findall(r"^\[(\d)\] step (\d) loss (\S+)", out, re.M))
    assert len(losses(whole)) == 6 and losses(sharded) == losses(whole), (whole, sharded)
    assert "[0] step 0 loss" in sharded and "fed 64 at (0, 0) (4, 4)" in sharded
    assert "[1] step 0 loss" in sharded and "fed 64 at (4, 0) (4, 4)" in sharded
    assert "fed 128 at (0, 0) (4, 4)" in whole


@needs_data
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="OpenMPI not installed")
def test_two_processes_under_mpirun_from_python():
    args = FLAGS + ["--mesh_shape", "rows:2", "--layout", "batch:rows"]
    want = lines(run([PYTHON, MNIST_PY, "--transport", "none"] + args))
    os.environ["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
    out = run(["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2",
               "--tag-output", "-x", "PYTHONPATH", PYTHON, MNIST_PY] + args)
    assert "rank 1 of 2 processes" in out
    # mpirun tags each piece of output it forwards, which may end mid-line:
    # each rank's stream is its pieces joined.
    pieces = re.split(r"\[1,(\d+)\]<stdout>:", out)
    for rank in (0, 1):
        mine = "".join(pieces[i + 1] for i in range(1, len(pieces), 2) if pieces[i] == str(rank))
        assert lines(mine) == want, out


@needs_data
def test_data_helpers_read_the_files_and_draw_the_cpp_order():
    import mtf
    images, labels = mtf.data.load_mnist(DATA_DIR, "t10k")
    assert images.shape == (10000, 28, 28) and images.dtype == "uint8"
    assert labels.shape == (10000,) and labels.dtype == "int32" and labels.max() == 9
    a, b = mtf.data.BatchSampler(100, 30, 5), mtf.data.BatchSampler(100, 30, 5)
    first = a.next()
    assert len(set(first)) == 30 and (first == b.next()).all()
    state = a.state()
    after = a.next()
    b.restore(state)
    assert (b.next() == after).all()
    with pytest.raises(mtf.IoError, match="nowhere"):
        mtf.data.load_mnist("/nowhere", "train")
    with pytest.raises(mtf.ValueError, match="batch size"):
        mtf.data.BatchSampler(10, 20, 1)


def test_simulate_example_lays_out_a_python_model_on_a_pod():
    out = run([PYTHON, os.path.join(ROOT, "examples", "python", "simulate.py"), "--batch", "64",
               "--length", "128", "--d_model", "256", "--heads", "4", "--d_ff", "1024",
               "--vocab", "1024", "--layers", "1", "--time_budget", "20"])
    assert "512 cores" in out and "auto_layout:" in out
    chosen = re.search(r"simulated, mesh \S+, layout \"[^\"]+\":\n  step ([\d.]+) ms", out)
    assert chosen and float(chosen.group(1)) > 0, out
    assert "data parallelism (batch:all)" in out


CTRL_C_SCRIPT = r"""
import signal, sys, numpy as np, mtf
g = mtf.Graph(); m = mtf.Mesh(g, "m")
b, d, e = mtf.Dimension("batch", 64), mtf.Dimension("d", 512), mtf.Dimension("e", 512)
w = mtf.get_variable(m, "w", [d, e])
h = mtf.random_normal(m, [b, d])
for _ in range(200):
    h = mtf.rename_dimension(mtf.tanh(mtf.einsum([h, w], [b, e])), "e", "d")
ops = mtf.optimize.SgdOptimizer(0.1).minimize(mtf.reduce_mean(h))
s = mtf.Session(g, mesh_shape="r:2", layout="batch:r")
last, runs = s.variable_value("w"), 0
print("ready", flush=True)
# Ctrl-C may land only while a run is under way: the bookkeeping between
# runs (reading 1 MiB of w) is not what this checks.
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
try:
    while True:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        s.run(ops)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
        last, runs = s.variable_value("w"), runs + 1
except KeyboardInterrupt:
    if s.run_counter == runs:
        # Stopped inside a run: that run changed nothing.
        assert (s.variable_value("w") == last).all()
    else:
        # Ctrl-C after the run's last step: the run completed and Python
        # raised the interrupt after it, as between any two statements.
        assert s.run_counter == runs + 1, (s.run_counter, runs)
    s.run(ops)  # and the session still runs
    print("interrupted cleanly after", runs, "runs", flush=True)
"""


def test_ctrl_c_stops_a_run_cleanly():
    p = subprocess.Popen([PYTHON, "-c", CTRL_C_SCRIPT], env=env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "interrupted cleanly" in out


def test_the_readme_python_example_runs_as_written():
    readme = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "the README has no Python example"
    for block in blocks:
        out = run([PYTHON, "-c", block])
        assert float(out.strip()) > 0


@pytest.mark.skipif(not os.path.isdir("/usr/share/sword/modules/texts/ztext/engWEB2015eb"),
                    reason="sword-text-web not installed")
def test_translate_example_trains_and_translates(tmp_path):
    out = run([PYTHON, os.path.join(ROOT, "examples", "python", "translate.py"), "--steps", "4",
               "--eval_every", "2", "--layers", "1", "--d_model", "32", "--d_ff", "64",
               "--heads", "2", "--d_kv", "16", "--batch", "8", "--length", "48",
               "--vocab_size", "1000", "--vocab_dir", str(tmp_path), "--test_sentences", "8",
               "--decode_sentences", "4", "--beams", "2", "--packed", "--clip_norm", "0.5",
               "--microbatches", "2", "--metrics_jsonl", str(tmp_path / "m.jsonl"),
               "--mesh_shape", "rows:2", "--layout", "batch:rows"])
    metrics = [json.loads(line) for line in open(tmp_path / "m.jsonl")]
    assert [m["step"] for m in metrics] == [1, 2, 2, 3, 4, 4], metrics
    assert metrics[0]["gradient_norm"] > 0 and metrics[2]["dev_loss"] > 0
    assert re.search(r"^data: 310\d\d pairs", out, re.M), out
    assert re.search(r"^step 4 loss [\d.]+ dev loss [\d.]+ gradient norm [\d.]+", out, re.M), out
    assert re.search(r"^test, greedy: BLEU = [\d.]+", out, re.M), out
    assert re.search(r"^test, 2 beams: BLEU = [\d.]+", out, re.M), out
    assert re.search(r"^In the beginning God created the heavens and the earth\. -> \S", out,
                     re.M), out


def test_every_binding_is_called():
    missing = sorted(set(BINDINGS) - CALLED)
    assert not missing, f"bindings no test calls: {missing}"


@pytest.mark.skipif(not os.path.isdir("/usr/share/games/fortunes"), reason="fortunes missing")
def test_lm_microbatches_train_as_the_whole_batch():
    lm = os.path.join(BUILD, "examples", "transformer_lm")
    small = ["--layers", "1", "--d_model", "32", "--d_ff", "64", "--heads", "2", "--d_kv", "16",
             "--batch", "8", "--length", "16", "--sample_bytes", "0", "--steps", "6",
             "--eval_every", "3", "--eval_batches", "2", "--loss_digits", "17"]
    pattern = re.compile(r"^step (\d+) loss (\S+) held-out loss (\S+)", re.M)
    whole = pattern.findall(run([lm] + small))
    for n, mesh in (("2", []), ("4", ["--mesh_shape", "all:2", "--layout", "batch:all"])):
        parts = pattern.findall(run([lm, "--microbatches", n] + mesh + small))
        assert [p[0] for p in parts] == [w[0] for w in whole] == ["1", "3", "6"]
        for p, w in zip(parts, whole):
            assert float(p[1]) == pytest.approx(float(w[1]), rel=1e-5)
            assert float(p[2]) == pytest.approx(float(w[2]), rel=1e-5)
    for args, message in ((["--microbatches", "3"], "3 microbatches do not divide the batch of 8"),
                          (["--microbatches", "8", "--mesh_shape", "all:2", "--layout",
                            "batch:all"], "leaves 1 rows per part")):
        bad = subprocess.run([lm] + small + args, capture_output=True, text=True)
        assert bad.returncode != 0 and message in bad.stderr, bad.stderr


@pytest.mark.skipif(not os.path.isdir("/usr/share/games/fortunes"), reason="fortunes missing")
def test_lm_microbatches_across_processes_are_the_in_process_bits():
    lm = os.path.join(BUILD, "examples", "transformer_lm")
    args = ["--layers", "1", "--d_model", "32", "--d_ff", "64", "--heads", "2", "--d_kv", "16",
            "--batch", "8", "--length", "16", "--sample_bytes", "0", "--steps", "4",
            "--eval_every", "2", "--eval_batches", "2", "--loss_digits", "17",
            "--microbatches", "2", "--mesh_shape", "all:2", "--layout", "batch:all",
            "--reproducible", "true"]
    pattern = re.compile(r"^(?:\[0\] )?(step \d+ loss \S+ held-out loss \S+)", re.M)
    want = pattern.findall(run([lm] + args))
    out = run([os.path.join(BUILD, "tools", "mtf-launch"), "-n", "2", "--output", "all", "--",
               lm] + args)
    assert "rank 1 of 2 processes" in out
    assert len(want) == 3 and pattern.findall(out)[:3] == want, out
