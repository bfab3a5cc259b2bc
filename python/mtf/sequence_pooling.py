"""Pooling and striding along one dimension, Mesh TensorFlow's
pool_tensor_1d and stride_tensor_1d (ops.py), as the Funnel Transformer
shortens its sequences: the dimension of size n becomes n / pool_size,
each new position made of pool_size neighbours (reduced) or the first of
them (strided). Built from reshape and a reduction or a slice, so they
lower on every layout and differentiate."""

from . import _mtf as _ops

__all__ = ["pool_tensor_1d", "stride_tensor_1d"]


def _split_off_pool(tensor, pool_dim, pool_size, what):
    """tensor reshaped so that pool_dim (a Dimension or a name) becomes
    [pool_dim / pool_size, pool]: returns (the reshaped tensor, the pool
    dimension, the shortened dimension)."""
    name = pool_dim if isinstance(pool_dim, str) else pool_dim.name
    if name not in tensor.shape.dimension_names:
        raise ValueError("%s: %s has no dimension %r to pool" % (what, tensor.shape, name))
    size = tensor.shape.get_dim_by_name(name).size
    if pool_size < 1 or size % pool_size != 0:
        raise ValueError("%s: dimension %r of size %d does not divide into pools of %d; pad it "
                         "to a multiple of the pool size" % (what, name, size, pool_size))
    pool = _ops.Dimension(name + "_pool", pool_size)
    short = _ops.Dimension(name, size // pool_size)
    dims = []
    for d in tensor.shape.dims:
        dims.extend([short, pool] if d.name == name else [d])
    return _ops.reshape(tensor, _ops.Shape(dims)), pool, short


def pool_tensor_1d(tensor, pool_dim, reduce_fn=None, pool_size=2):
    """Reduces each run of pool_size positions along pool_dim with reduce_fn
    (mtf.reduce_mean by default; reduce_max, reduce_min or any function
    taking reduced_dim=)."""
    reduce_fn = reduce_fn or _ops.reduce_mean
    x, pool, _ = _split_off_pool(tensor, pool_dim, pool_size, "pool_tensor_1d")
    return reduce_fn(x, reduced_dim=pool)


def stride_tensor_1d(tensor, pool_dim, pool_size=2):
    """Keeps every pool_size-th position along pool_dim, from the first."""
    x, pool, _ = _split_off_pool(tensor, pool_dim, pool_size, "stride_tensor_1d")
    first = _ops.slice(x, 0, 1, pool.name)
    return _ops.reshape(first, _ops.Shape([d for d in first.shape.dims if d.name != pool.name]))
