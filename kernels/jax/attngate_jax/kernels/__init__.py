"""The adapter's own kernels, listed explicitly (the one registry of built-ins); served
through the same kernel API (attngate_jax.api) as a team's."""
from ..api import KernelAdapter
from .flash import PallasFlash
from .paged import PallasPaged, PallasRaggedPaged, XlaPaged
from .splash import PallasSplash
from .xla import XlaDotProductAttention


def builtin_kernels() -> list[KernelAdapter]:
    return [XlaDotProductAttention(), PallasFlash(), PallasSplash(), PallasPaged(), PallasRaggedPaged(), XlaPaged()]
