"""mtf.layers: layers over named dimensions (Mesh TensorFlow's layers.py)."""

from ._mtf import layers as _impl

globals().update({name: getattr(_impl, name) for name in dir(_impl) if not name.startswith("_")})
__all__ = [name for name in dir(_impl) if not name.startswith("_")]
