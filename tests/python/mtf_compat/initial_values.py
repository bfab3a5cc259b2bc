"""Shared by the ported vocabulary-embedding tests: the original's
initialize_by_shape (variables given values chosen by their shape) and its
graph set-up, with the one-processor Session in place of the
PlacementMeshImpl lowering."""
import numpy as np

import mtf


def initialize_by_shape(shape_to_value):
    return {tuple(shape): value for shape, value in shape_to_value.items()}


def one_plus_range(shape):
    return 1 + np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


def run(fetch, feeds, initial_values):
    """Runs fetch with each variable set to initial_values(shape) — a dict
    keyed by shape, as the original's initialize_by_shape, or a function of
    the shape. A variable whose shape the dict lacks must be one the
    original zero-initializes."""
    graph = (fetch[0] if isinstance(fetch, (list, tuple)) else fetch).graph
    session = mtf.Session(graph, mesh_impl="placement")
    for name in session.variable_names:
        shape = tuple(session.variable_value(name).shape)
        if callable(initial_values):
            value = initial_values(shape)
        elif shape in initial_values:
            value = np.reshape(np.array(initial_values[shape], np.float32), shape)
        else:
            assert not session.variable_value(name).any(), (name, shape)
            continue
        session.set_variable_value(name, value)
    return session.run(fetch, feeds)


def new_graph(seq_len, vocab_size, model_size):
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mtf_mesh")
    dims = (mtf.Dimension("vocab", vocab_size), mtf.Dimension("model", model_size),
            mtf.Dimension("length", seq_len))
    return mesh, dims, mtf.VariableDType(activation_dtype=mtf.float32)
