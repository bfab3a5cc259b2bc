"""Reads checkpoints written by checkpoint_fixture with h5py (Debian's
python3-h5py) and checks shapes, values and attributes: one written by one
process, and one written by a job of 6 ranks in part files (its datasets are
HDF5 virtual datasets reading from the parts), opened from another working
directory.
Usage: python3 checkpoint_h5py_test.py FIXTURE_BINARY WORK_DIR"""
import os
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:
    print(f"SKIP: h5py is not installed ({e}); `apt-get install python3-h5py`")
    sys.exit(77)

fixture, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
path = os.path.join(work, "fixture.h5")
subprocess.run([fixture, path], check=True)
parts_dir = os.path.join(work, "parts")
os.makedirs(parts_dir, exist_ok=True)
for old in os.listdir(parts_dir):
    os.remove(os.path.join(parts_dir, old))
parts_path = os.path.join(parts_dir, "fixture.h5")
subprocess.run([fixture, parts_path, "parts"], check=True)
os.chdir("/")


def check(path):
    with h5py.File(path, "r") as f:
        assert f.attrs["mtf_format"] == "mtf-checkpoint", f.attrs["mtf_format"]
        assert int(f.attrs["step"][0]) == 42
        assert f.attrs["mesh_shape"] == "x:2;y:3", f.attrs["mesh_shape"]
        assert f.attrs["layout"] == "a:x;b:y", f.attrs["layout"]
        w = f["w1"][...]
        assert w.shape == (4, 6) and w.dtype == np.float32, (w.shape, w.dtype)
        want = np.array([[i * 10 + j + 0.25 for j in range(6)] for i in range(4)], np.float32)
        assert (w == want).all(), w
        assert list(f["w1"].attrs["dims"]) == ["a", "b"], f["w1"].attrs["dims"]
        assert f["w1"].attrs["dtype"] == "float32"
        m = f["w1.adam_m"][...]
        assert (m == -np.array([[i * 10 + j for j in range(6)] for i in range(4)], np.float32)).all()
        assert f["w1.adam_m"].attrs["mtf_name"] == "w1/adam_m"
        c = f["count"][...]
        assert c.dtype == np.int32 and list(c) == [7, 8, 9, 10, 11, 12], c
        assert f["s"][()] == np.float32(2.5)
        assert f["s"].shape == ()
        # bfloat16: 16-bit words, the upper half of each float32.
        h = f["half"][...]
        assert h.dtype == np.uint16 and f["half"].attrs["dtype"] == "bfloat16", h.dtype
        as_float = (h.astype(np.uint32) << 16).view(np.float32)
        bits = want.view(np.uint32)
        nearest_even = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32)
        assert (as_float == nearest_even.view(np.float32)).all(), as_float
        return dict(f.attrs)


check(path)
attrs = check(parts_path)
parts = sorted(attrs["mtf_parts"])
assert int(attrs["mtf_format_version"][0]) == 2, attrs["mtf_format_version"]
# w1 (split 2x3) is owned by all 6 ranks, so every rank wrote a part.
assert parts == [f"fixture.h5.part{r}-of-6.{parts[0][-16:]}" for r in range(6)], parts
assert sorted(os.listdir(parts_dir)) == sorted(["fixture.h5"] + parts), os.listdir(parts_dir)
with h5py.File(parts_path, "r") as f:
    assert f["w1"].is_virtual and not f["s"].is_virtual
with h5py.File(os.path.join(parts_dir, parts[5]), "r") as f:
    assert f.attrs["mtf_format"] == "mtf-checkpoint-part", f.attrs["mtf_format"]
print("h5py reads the checkpoint: shapes, values and attributes as written, "
      "from one file and from 6 part files")
