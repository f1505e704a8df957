"""Where the adapter's kernels come from, each checked against the kernel API's contract:
its own (attngate_jax.kernels:builtin_kernels), `--kernels module:factory` in the order
given, then installed packages' entry points of the group `attngate.kernels`.

A source that fails (its module does not import, its factory raises, a kernel breaks
the contract or repeats a name already served) becomes a LoadError naming it; every
other source still serves.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from . import ADAPTER, VERSION, api

GROUP = "attngate.kernels"
BUILTIN = "attngate_jax.kernels:builtin_kernels"
SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*\Z")
# The harness's one rule for kernel names (docs/protocol.md, GET /v1/kernels): safe on a
# terminal, in a file name and in a URL path. A name it would refuse is refused here, by source.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")
DTYPES = frozenset({"f32", "bf16"})


class ContractError(ValueError):
    """A kernel that does not follow the kernel API; the message says which rule."""


@dataclasses.dataclass(frozen=True)
class Served:
    """A kernel the adapter serves, where it came from and the distribution it ships in."""
    kernel: api.KernelAdapter
    source: str
    package: str | None
    package_version: str | None

    @property
    def name(self) -> str:
        return self.kernel.name

    def version(self, jax_version: str | None) -> str:
        """As /v1/kernels reports it (and the harness fingerprints it)."""
        if self.package == ADAPTER:
            return f"jax {jax_version}"
        own = self.kernel.version or (f"{self.package} {self.package_version}" if self.package_version else "unversioned")
        return f"{own}; jax {jax_version}"


@dataclasses.dataclass(frozen=True)
class LoadError:
    source: str
    error: str

    def as_json(self) -> dict[str, str]:
        return {"source": self.source, "error": self.error}


@dataclasses.dataclass
class Registry:
    served: list[Served] = dataclasses.field(default_factory=list)
    errors: list[LoadError] = dataclasses.field(default_factory=list)

    def kernels(self) -> list[api.KernelAdapter]:
        return [s.kernel for s in self.served]

    def packages(self) -> dict[str, str | None]:
        """Distribution -> version of every served kernel's own package and of the
        packages it declares (attngate-jax itself is the adapter's own version)."""
        out: dict[str, str | None] = {}
        for s in self.served:
            if s.package and s.package != ADAPTER:
                out[s.package] = s.package_version
            for dist in s.kernel.packages:
                out[dist] = distribution_version(dist)
        return dict(sorted(out.items()))


def distribution_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_spec(spec: str) -> str:
    """`module:factory` as --kernels takes it; raises ValueError naming what is wrong."""
    if not SPEC.match(spec):
        raise ValueError(f"--kernels {spec!r}: expected MODULE:FACTORY, e.g. team_attention.gate:make")
    return spec


def _package_of(module: str) -> tuple[str | None, str | None]:
    """The distribution that installed `module`, else its top-level package and __version__."""
    top = module.split(".")[0]
    if top == "attngate_jax":
        return ADAPTER, VERSION
    dists = importlib.metadata.packages_distributions().get(top)
    if dists:
        return dists[0], distribution_version(dists[0])
    return top, getattr(sys.modules.get(top), "__version__", None)


def _members(value: Any, field: str, allowed: frozenset[str], kernel: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ContractError(f"kernel {kernel!r}: {field} must be a collection of names, got {value!r}")
    items = tuple(value)
    unknown = sorted(str(x) for x in items if x not in allowed)
    if unknown:
        raise ContractError(f"kernel {kernel!r}: unknown {field} {', '.join(map(repr, unknown))} "
                            f"(API {api.API_VERSION} knows {', '.join(sorted(allowed))})")
    return items


def _one_of(value: Any, field: str, allowed: frozenset[str], kernel: str) -> None:
    if value not in allowed:
        raise ContractError(f"kernel {kernel!r}: {field} {value!r} is not one of {', '.join(sorted(allowed))}")


def check_kernel(k: Any, mode: api.Mode | None = None) -> api.KernelAdapter:
    """Raises ContractError unless `k` is a kernel of this API version with valid declarations."""
    if not isinstance(k, api.KernelAdapter):
        raise ContractError(f"the factory returned {type(k).__name__}, not an attngate_jax.api.KernelAdapter")
    name = getattr(k, "name", None)
    if not isinstance(name, str) or not NAME.match(name):
        raise ContractError(f"{type(k).__name__}: name {name!r} must be 1 to 128 letters, digits, '_', '-' or '.', "
                            "starting with a letter or digit ([A-Za-z0-9][A-Za-z0-9_.-]{0,127})")
    version = getattr(k, "api_version", None)
    # An int and that exact value: True, 1.0 or an object equal to everything only look like version 1.
    if type(version) is not int or version != api.API_VERSION:
        declared = ("no api_version" if version is None else f"API version {version!r}" if type(version) is int
                    else f"an api_version of type {type(version).__name__}, not int")
        raise ContractError(f"kernel {name!r} declares {declared}; this adapter speaks attngate kernel API "
                            f"version {api.API_VERSION} (set api_version = {api.API_VERSION} once it follows it)")
    features = _members(getattr(k, "features", None), "features", api.FEATURES, name)
    if not DTYPES & set(features):
        raise ContractError(f"kernel {name!r}: features must name at least one dtype (f32, bf16)")
    _members(k.rounds_to_case_dtype, "rounds_to_case_dtype", api.ROUNDINGS, name)
    _members(k.masked_nan_leaks, "masked_nan_leaks", api.MASKED_NAN_INPUTS, name)
    _members(k.reads_unreadable_slots, "reads_unreadable_slots", api.UNREADABLE_SLOTS, name)
    _one_of(k.workspace_growth, "workspace_growth", api.WORKSPACE_GROWTHS, name)
    _one_of(k.causal_alignment, "causal_alignment", api.CAUSAL_ALIGNMENTS, name)
    _one_of(k.fully_masked_row, "fully_masked_row", api.FULLY_MASKED_ROWS, name)
    if k.version is not None and not isinstance(k.version, str):
        raise ContractError(f"kernel {name!r}: version must be a string or None, got {k.version!r}")
    if not isinstance(k.notes, Mapping) or not all(isinstance(a, str) and isinstance(b, str) for a, b in k.notes.items()):
        raise ContractError(f"kernel {name!r}: notes must map strings to strings")
    if isinstance(k.packages, str) or not all(isinstance(p, str) for p in k.packages):
        raise ContractError(f"kernel {name!r}: packages must be a tuple of distribution names")
    if mode is not None:
        try:
            text = k.description(mode)
        except Exception as e:  # noqa: BLE001 - a broken description would break /v1/kernels
            raise ContractError(f"kernel {name!r}: description() raised {type(e).__name__}: {e}") from None
        if not isinstance(text, str):
            raise ContractError(f"kernel {name!r}: description() returned {type(text).__name__}, not str")
    return k


def _produced(factory: Callable[[], Any]) -> list[Any]:
    made = factory()
    if isinstance(made, api.KernelAdapter):
        return [made]
    if isinstance(made, (str, bytes)) or not isinstance(made, Iterable):
        raise ContractError(f"the factory returned {type(made).__name__}, not a KernelAdapter or a list of them")
    return list(made)


class Loader:
    """Fills a Registry source by source, in order; a later duplicate name is refused."""

    def __init__(self, mode: api.Mode | None = None) -> None:
        self.mode = mode
        self.registry = Registry()
        self._by_name: dict[str, Served] = {}

    def add(self, source: str, load: Callable[[], Callable[[], Any]], module: str,
            package: tuple[str | None, str | None] | None = None) -> None:
        try:
            factory = load()
        except (Exception, SystemExit) as e:  # noqa: BLE001 - any import failure is the source's error
            self._fail(source, f"cannot import {module}: {type(e).__name__}: {e}")
            return
        try:
            made = _produced(factory)
        except ContractError as e:
            self._fail(source, str(e))
            return
        except (Exception, SystemExit) as e:  # noqa: BLE001 - the factory's own failure
            self._fail(source, f"the factory raised {type(e).__name__}: {e}")
            return
        dist = package or _package_of(module)
        for k in made:
            try:
                check_kernel(k, self.mode)
            except ContractError as e:
                self._fail(source, str(e))
                continue
            other = self._by_name.get(k.name)
            if other is not None:
                self._fail(source, f"kernel name {k.name!r} is already served (from {other.source})")
                continue
            served = Served(k, source, *dist)
            self._by_name[k.name] = served
            self.registry.served.append(served)

    def _fail(self, source: str, message: str) -> None:
        self.registry.errors.append(LoadError(source, message))


def _import_factory(spec: str) -> Callable[[], Callable[[], Any]]:
    module, attr = spec.split(":", 1)

    def load() -> Callable[[], Any]:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj
    return load


def load(specs: Sequence[str] = (), *, builtins: bool = True, entry_points: bool = True,
         mode: api.Mode | None = None) -> Registry:
    """The adapter's kernels: builtins, then `specs`, then entry points not already given as a spec."""
    loader = Loader(mode)
    if builtins:
        loader.add(f"{ADAPTER} (built in)", _import_factory(BUILTIN), BUILTIN.split(":")[0])
    for spec in specs:
        loader.add(f"--kernels {spec}", _import_factory(spec), spec.split(":")[0])
    if entry_points:
        for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
            if ep.value in specs:
                continue  # the same factory named on the command line: served once
            dist = ep.dist
            package = (dist.name, dist.version) if dist is not None else None
            where = f" ({dist.name} {dist.version})" if dist is not None else ""
            loader.add(f"entry point {ep.name} = {ep.value}{where}", ep.load, ep.module, package)
    return loader.registry
