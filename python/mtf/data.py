"""mtf.data: the C++ examples' data helpers (Fashion-MNIST files, seeded batch order)."""

from ._mtf import data as _impl

globals().update({name: getattr(_impl, name) for name in dir(_impl) if not name.startswith("_")})
__all__ = [name for name in dir(_impl) if not name.startswith("_")]
