"""HDF5 checkpoints from Python: any mesh in, any mesh out; the manager."""

import os

import numpy as np
import pytest

import mtf


def model():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    w = mtf.get_variable(m, "w", "a:4;b:6")
    loss = mtf.reduce_sum(mtf.square(w))
    return g, loss, mtf.optimize.MomentumOptimizer(0.1, 0.9).minimize(loss)


def test_save_and_restore_into_another_layout(tmp_path):
    g, loss, ops = model()
    s = mtf.Session(g, mesh_shape="r:2;c:2", layout="a:r;b:c")
    s.run(ops)
    path = str(tmp_path / "ckpt.h5")
    mtf.save_checkpoint(s, path, step=7, metadata={"note": "hello"})
    info = mtf.read_checkpoint_info(path)
    assert info["step"] == 7 and info["metadata"] == {"note": "hello"}
    assert info["variables"] == ["w", "w/momentum"] and info["layout"] == "a:r;b:c"
    assert info["files"] == [path]  # one process: one file
    np.testing.assert_array_equal(mtf.read_checkpoint_variable(path, "w"), s.variable_value("w"))
    g2, _, _ = model()
    other = mtf.Session(g2, mesh_shape="r:3", layout="b:r")
    restored = mtf.restore_checkpoint(other, path)
    assert restored["step"] == 7 and other.run_counter == s.run_counter
    for name in ["w", "w/momentum"]:
        np.testing.assert_array_equal(other.variable_value(name), s.variable_value(name))
    g3, _, _ = model()
    partial = mtf.Session(g3)
    before = partial.variable_value("w/momentum")
    mtf.restore_checkpoint(partial, path, only=["w"], restore_run_counter=False)
    np.testing.assert_array_equal(partial.variable_value("w/momentum"), before)
    assert partial.run_counter == 0


def test_checkpoint_errors_lose_nothing(tmp_path):
    g, loss, ops = model()
    s = mtf.Session(g)
    before = s.variable_value("w")
    with pytest.raises(mtf.IoError, match="nonexistent"):
        mtf.restore_checkpoint(s, str(tmp_path / "nonexistent.h5"))
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(OSError):  # an IoError is an OSError
        mtf.read_checkpoint_info(str(bad))
    np.testing.assert_array_equal(s.variable_value("w"), before)
    with pytest.raises(mtf.ValueError, match="Session"):
        mtf.save_checkpoint("session", str(tmp_path / "x.h5"), 1)


def test_manager_keeps_the_newest(tmp_path):
    g, loss, ops = model()
    s = mtf.Session(g)
    manager = mtf.CheckpointManager(str(tmp_path), keep=2)
    assert manager.latest_path() is None and manager.restore_latest(s) is None
    for step in (1, 2, 3):
        s.run(ops)
        manager.save(s, step, {"step": str(step)})
    assert manager.steps() == [2, 3] and manager.directory == str(tmp_path)
    assert os.path.basename(manager.latest_path()) == "ckpt-3.h5"
    g2, _, _ = model()
    fresh = mtf.Session(g2, mesh_shape="r:2", layout="a:r")
    info = manager.restore_latest(fresh)
    assert info["step"] == 3 and info["metadata"]["step"] == "3"
    np.testing.assert_array_equal(fresh.variable_value("w"), s.variable_value("w"))


def test_manager_keeps_the_best(tmp_path):
    g, loss, ops = model()
    s = mtf.Session(g)
    manager = mtf.CheckpointManager(str(tmp_path), keep=1)
    manager.set_keep_best("dev_bleu", higher_is_better=True)
    assert manager.best() is None
    for step, bleu in ((1, "7.5"), (2, "9.25"), (3, "8")):
        s.run(ops)
        manager.save(s, step, {"dev_bleu": bleu})
    path, value = manager.best()
    assert os.path.basename(path) == "ckpt-2.h5" and value == 9.25
    assert manager.steps() == [2, 3]
    with pytest.raises(mtf.ValueError, match="not a number"):
        manager.save(s, 4, {"dev_bleu": "n/a"})


SAVED_BY_TWO = """
import sys
import mtf
g = mtf.Graph()
m = mtf.Mesh(g, "m")
w = mtf.get_variable(m, "w", "a:4;b:6")
ops = mtf.optimize.MomentumOptimizer(0.1, 0.9).minimize(mtf.reduce_sum(mtf.square(w)))
s = mtf.Session(g, mesh_shape="r:2", layout="a:r")
s.run(ops)
directory, files = sys.argv[1], sys.argv[2]
mtf.save_checkpoint(s, directory + "/ckpt.h5", 1, files=files)
mtf.CheckpointManager(directory + "/managed", files=files).save(s, 1)
print("saved", files)
"""


def test_two_processes_save_part_files_or_one_file(tmp_path):
    import subprocess
    import sys
    from conftest import BUILD
    script = tmp_path / "save.py"
    script.write_text(SAVED_BY_TWO)
    launch = os.path.join(BUILD, "tools", "mtf-launch")
    values = {}
    for files, count in (("per_rank", 3), ("one_file", 1)):
        d = tmp_path / files
        (d / "managed").mkdir(parents=True)
        out = subprocess.run([launch, "-n", "2", "--", sys.executable, str(script), str(d), files],
                             capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python")))
        assert out.returncode == 0 and "saved " + files in out.stdout, out.stdout + out.stderr
        for path in (str(d / "ckpt.h5"), str(d / "managed" / "ckpt-1.h5")):
            info = mtf.read_checkpoint_info(path)
            assert len(info["files"]) == count and info["files"][0] == path, info
            assert info["format_version"] == (2 if count > 1 else 1)
        g, _, _ = model()
        one = mtf.Session(g)
        mtf.restore_checkpoint(one, str(d / "ckpt.h5"))
        values[files] = [one.variable_value(n) for n in ("w", "w/momentum")]
    for a, b in zip(values["per_rank"], values["one_file"]):
        np.testing.assert_array_equal(a, b)
    g, _, _ = model()
    with pytest.raises(mtf.ValueError, match="per_rank"):
        mtf.save_checkpoint(mtf.Session(g), str(tmp_path / "x.h5"), 1, files="parts")
    with pytest.raises(mtf.ValueError, match="one_file"):
        mtf.CheckpointManager(str(tmp_path), files="every")
