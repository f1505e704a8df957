"""Kernel sources that break the kernel API, one factory each, for the adapter to refuse by name."""
from __future__ import annotations

from attngate_jax.api import KernelAdapter

from wrong_conventions import ScaleTwice


def make_raises() -> list[KernelAdapter]:
    raise RuntimeError("the team's factory failed: no device config")


class Duplicate(ScaleTwice):
    name = "jax-xla"  # the adapter's own kernel has this name


class NextApi(ScaleTwice):
    api_version = 2
    name = "from-the-future"


class UnknownFeature(ScaleTwice):
    name = "sparse-too-early"
    features = ("causal", "block_sparse", "f32")


class Fine(ScaleTwice):
    name = "fine-beside-broken"


def make_duplicate() -> list[KernelAdapter]:
    return [Duplicate()]


def make_next_api() -> list[KernelAdapter]:
    return [NextApi()]


def make_unknown_feature() -> list[KernelAdapter]:
    return [UnknownFeature(), Fine()]  # the broken one is refused, its sibling still serves


def make_not_a_kernel() -> list[object]:
    return [object()]
