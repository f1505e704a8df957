"""The adapter's kernels, listed explicitly (the one registry)."""
from .flash import PallasFlash
from .splash import PallasSplash
from .xla import XlaDotProductAttention


def all_kernels():
    return [XlaDotProductAttention(), PallasFlash(), PallasSplash()]
