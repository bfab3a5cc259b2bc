"""mtf.optimize: optimizers that turn gradients into update operations."""

from ._mtf import optimize as _impl

globals().update({name: getattr(_impl, name) for name in dir(_impl) if not name.startswith("_")})
__all__ = [name for name in dir(_impl) if not name.startswith("_")]
