"""mtf.models: the project's models (the paper's Transformer LM and its incremental decoder)."""

from ._mtf import models as _impl

globals().update({name: getattr(_impl, name) for name in dir(_impl) if not name.startswith("_")})
__all__ = [name for name in dir(_impl) if not name.startswith("_")]
