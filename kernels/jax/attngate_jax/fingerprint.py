"""What this adapter runs with: a flat object of strings (or null) for results.json."""
import importlib.metadata
import platform

import jax


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def fingerprint(mode: str) -> dict:
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
        "platform": platform.platform(),
    }
