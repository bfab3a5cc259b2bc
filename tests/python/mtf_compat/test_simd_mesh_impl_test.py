"""Mesh TensorFlow's simd_mesh_impl_test.py (tensorflow/mesh), the cases of
its testLogicalToPhysical ported: a logical mesh laid onto a TPU's physical
cores is a permutation of them. Mesh TensorFlow's
auto_logical_to_physical_tpu(logical_shape, physical_shape) becomes the
simulator's Topology.core_mapping on a torus of that physical shape (the
last physical dimension, 2 in [8, 8, 2], is the cores of a chip). Its
testHierarchicalTiling is not ported: mtf has no HierarchicalTiling spec
(a user gives an explicit order, simulate(..., physical_order=...))."""
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
