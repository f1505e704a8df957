"""What this adapter runs with: a flat object of strings (or null) for results.json."""
from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Mapping
from typing import Any

import jax


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def fingerprint(mode: str, kernel_packages: Mapping[str, str | None] | None = None,
                tpu_target: str | None = None) -> dict[str, Any]:
    """`kernel_packages`: distribution -> version of the packages the served kernels ship
    in (a team's own kernel package, tokamax): a bump of one shows in "What changed"."""
    device = jax.devices()[0]
    return {
        "python": platform.python_version(),
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "libtpu": _version("libtpu") or _version("libtpu-nightly"),
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "ml_dtypes": _version("ml_dtypes"),
        "backend": jax.default_backend(),
        "device_kind": device.device_kind,
        "device_count": str(jax.device_count()),
        "interpret_mode": mode,
        "tpu_target": tpu_target,
        "platform": platform.platform(),
        "kernel_packages": dict(kernel_packages or {}),
    }
