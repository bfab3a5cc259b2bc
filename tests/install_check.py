"""Run by install_test.cmake with PYTHONPATH naming only the install prefix's
site directory: the installed mtf package imports from there (not from the
build tree) and runs a small graph on a two-processor mesh."""

import os

import numpy as np

import mtf

site = os.path.realpath(os.environ["PYTHONPATH"])
assert os.path.realpath(mtf.__file__).startswith(site), (mtf.__file__, site)
g = mtf.Graph()
x = mtf.placeholder(mtf.Mesh(g, "m"), "batch:4;io:3")
y = mtf.reduce_sum(mtf.relu(x), reduced_dim="io")
out = mtf.Session(g, mesh_shape="r:2", layout="batch:r").run(y, {x: np.arange(12.0).reshape(4, 3) - 4})
assert out.tolist() == [0.0, 1.0, 9.0, 18.0], out
print("installed mtf module OK:", mtf.__file__)
