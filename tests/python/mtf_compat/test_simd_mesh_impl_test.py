"""Mesh TensorFlow's simd_mesh_impl_test.py (tensorflow/mesh), ported:
testHierarchicalTiling on mtf.simd_mesh_impl.HierarchicalTiling, and the
cases of testLogicalToPhysical, where Mesh TensorFlow's
auto_logical_to_physical_tpu(logical_shape, physical_shape) becomes the
simulator's Topology.core_mapping on a torus of that physical shape (the
last physical dimension, 2 in [8, 8, 2], is the cores of a chip)."""
import math

import pytest

import mtf


def auto_logical_to_physical_tpu(logical_shape, physical_shape):
    topology = mtf.Topology.preset("tpu-v2-128")
    if len(physical_shape) == 3:
        chips, cores = physical_shape[:2], physical_shape[2]
    else:
        chips, cores = physical_shape, 1
    topology.apply_overrides("chips=%s,cores_per_chip=%d" % ("x".join(map(str, chips)), cores))
    mesh = ";".join("a%d:%d" % (i, n) for i, n in enumerate(logical_shape))
    return topology.core_mapping(mesh)


# (physical_shape, logical_shape) in the original's order: its first list
# is the one whose product the result is checked against.
@pytest.mark.parametrize("physical_shape,logical_shape", [
    ([128], [8, 8, 2]),
    ([8, 16], [8, 8, 2]),
    ([32, 4], [8, 8, 2]),
    ([2, 32, 4], [256]),
    ([4, 4, 8], [8, 8, 2]),
])
def test_logical_to_physical(physical_shape, logical_shape):
    # The original passes its lists to auto_logical_to_physical_tpu as
    # (logical, physical): the first is the logical mesh.
    logical_to_physical = auto_logical_to_physical_tpu(physical_shape, logical_shape)
    assert sorted(logical_to_physical) == list(range(math.prod(physical_shape)))


@pytest.mark.parametrize("physical_shape,spec", [
    ([8, 8, 2], [("dp", None)]),
    ([8, 8, 2], [("dp", None), ("mp", [1, 1, 2])]),
    ([8, 8, 2], [("dp", [8, 8, 1]), ("mp", [1, 1, 2])]),
    ([8, 8, 2], [("dp", None), ("mp", [2, 8, 1])]),
    ([8, 8, 2], [("dp", None), ("mp1", [1, 8, 1]), ("mp2", [8, 1, 2])]),
    ([8, 8, 2], [("dp", None), ("mp1", [2, 2, 1]), ("mp2", [2, 2, 1])]),
    ([9, 15, 7], [("d1", [3, 5, 1]), ("d2", [3, 3, 7])]),
])
def test_hierarchical_tiling(physical_shape, spec):
    hierarchical_tiling = mtf.simd_mesh_impl.HierarchicalTiling(spec, physical_shape)
    mesh_shape = hierarchical_tiling.mesh_shape
    logical_to_physical = hierarchical_tiling.logical_to_physical
    num_cores = physical_shape[0] * physical_shape[1] * physical_shape[2]
    expected_mesh_shape = mtf.simd_mesh_impl.HierarchicalTiling.spec_to_mesh_shape(
        spec, num_cores)
    assert mesh_shape == expected_mesh_shape
    assert sorted(logical_to_physical) == list(range(num_cores))
