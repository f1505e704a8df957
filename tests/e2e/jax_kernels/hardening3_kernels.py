"""Kernels that break the kernel API's rules in the ways issue 38 found, from a module that
prints a readiness line at import, as any kernel module could: the adapter must refuse each
kernel by name and the harness must not follow the line."""
from __future__ import annotations

import os

from attngate_jax.api import KernelAdapter

from wrong_conventions import ScaleTwice

# Where a kernel module would send the harness; nothing listens there.
print(f"ATTNGATE-ADAPTER LISTENING {os.environ.get('HARDENING3_FAKE_URL', 'http://127.0.0.1:9')}", flush=True)


class EqualsAll:
    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


class PlusName(ScaleTwice):
    name = "team+v2"


class ApiTrue(ScaleTwice):
    name = "api-true"
    api_version = True  # type: ignore[assignment]


class ApiFloat(ScaleTwice):
    name = "api-float"
    api_version = 1.0  # type: ignore[assignment]


class ApiEqualsAll(ScaleTwice):
    name = "api-equals-all"
    api_version = EqualsAll()  # type: ignore[assignment]


class Fine(ScaleTwice):
    name = "fine-hardening3"


def make() -> list[KernelAdapter]:
    return [PlusName(), ApiTrue(), ApiFloat(), ApiEqualsAll(), Fine()]
