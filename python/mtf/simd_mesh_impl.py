"""mtf.simd_mesh_impl: the names Mesh TensorFlow's simd_mesh_impl module
gives a TPU's logical-to-physical layout (HierarchicalTiling)."""

from ._mtf import HierarchicalTiling  # noqa: F401

__all__ = ["HierarchicalTiling"]
