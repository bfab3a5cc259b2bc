"""mtf: Mesh TensorFlow in C++, from Python.

Tensors have named dimensions, a mesh is an n-dimensional array of
processors with named dimensions, and layout rules such as
"batch:rows;hidden:cols" say which tensor dimensions are split across
which mesh dimensions. Build a graph with the ops and layers, then run it
with a Session on any mesh and layout (NumPy arrays in and out), simulate
it on a TPU-shaped pod, or let auto_layout choose the layout:

    import mtf, numpy as np
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    batch, hidden = mtf.Dimension("batch", 100), mtf.Dimension("hidden", 1024)
    x = mtf.placeholder(mesh, [batch, mtf.Dimension("io", 784)])
    h = mtf.layers.dense(x, hidden, activation=mtf.relu, name="h")
    session = mtf.Session(graph, mesh_shape="rows:2;cols:2", layout="batch:rows;hidden:cols")
    print(session.run(h, {x: np.ones((100, 784), np.float32)}).shape)

Names and call shapes follow Mesh TensorFlow's Python API where they can.
"""

from ._mtf import *  # noqa: F401,F403  (the ops, Session, simulate, ...)
from ._mtf import (  # noqa: F401  (names `import *` leaves out)
    Error, ShapeError, DTypeError, LayoutError, ValueError, IoError, TimeoutError,
    PeerLostError, OutOfMemoryError, InternalError, float32, int32, bfloat16,
    range, slice, pow, abs,
)
from .sequence_pooling import pool_tensor_1d, stride_tensor_1d  # noqa: F401
from . import data, layers, models, optimize, simd_mesh_impl, transformer  # noqa: F401

__all__ = [name for name in dir() if not name.startswith("_")]
