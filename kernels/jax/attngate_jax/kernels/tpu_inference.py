"""tpu-inference's ragged paged attention v3 (the kernel vLLM's TPU backend runs), served
through the public kernel API like a team's own kernels:

    adapter.py --kernels attngate_jax.kernels.tpu_inference:make

tpu-inference 0.25.0 pins jax 0.10.2, the jax of requirements-new.lock; ci/install-deps.sh
installs it into .venv/jax-new from requirements-new-nodeps.lock with --no-deps, without its
serving stack (vllm, torch, torchvision).

The loader. The package's `__init__` imports vLLM's logger and torch; the kernel module
(tpu_inference/kernels/ragged_paged_attention/v3/kernel.py) imports jax and its sibling
util.py alone, and the `__init__`s between them hold only the licence. So the loader puts
a bare `tpu_inference` package (its path, none of its `__init__`) in sys.modules and imports
the kernel module beneath it. It was written for one release (WRITTEN_FOR) and refuses any
other by name: a new release's kernel may import what the bare package cannot give. It also
refuses a jax other than the one that release pins (pip's --no-deps never compares them). A
process that already imported tpu_inference for real keeps its own package and kernel
module, unpatched (off a TPU its programs then do not lower: a skip naming the error).

The TPU generation. kernel.py picks its default block sizes and an int16 path from
`get_tpu_version()`, which reads jax.devices()[0] (-1 on a CPU, and the kernel then fails).
The loader points the kernel module's name at `api.tpu_generation()` instead: the TPU's own
on a TPU, the adapter's --tpu-target elsewhere, so that the program checked on a CPU runner
is the one the target would run.

Conventions (kernel.py's ref_ragged_paged_attention, the kernel's own reference):
- q [T, Hq, D], the new tokens' keys and values [T, Hkv, D], and a cache
  [pages, page_size, 2 Hkv / packing, packing, D rounded up to 128] with K and V interleaved
  per head (merge_kv); the kernel writes the new tokens' K and V into the cache at
  [kv_len - q_len, kv_len) before attending. The adapter passes each sequence's last q_len
  tokens from the case's pools as keys and values, so the write leaves the cache as it was;
- `distribution` (i, j, k): sequences [0, i) decode only, [i, j) chunked prefill only,
  [j, k) mixed. As vLLM's batch builds it: the leading q_len == 1 sequences are decode, the
  rest mixed;
- causal is bottom-right (use_causal_mask); sliding_window = left + 1 and it applies inside
  the causal mask only (a non-causal ragged case with a window is declined); soft_cap after
  sm_scale; masked scores are replaced (jnp.where), so only a NaN in V leaks;
- out_dtype left at its default, as vLLM calls it: for a bf16 case the kernel keeps its
  running max, denominator and accumulator in bf16 (kernel.py), which attngate's declared
  roundings (output, probabilities) do not cover: a bf16 golden would need a wider tolerance
  than it gets, were it to run here.
vLLM runs kernel_hd64.py at head_dim 64; that module imports tpu_inference.logger and
tpu_inference.utils (vLLM, torch), which the loader does not load: head_dim 64 is declined,
since checking kernel.py there would gate a program vLLM never runs.

The TPU interpreter fails on it in jax 0.10.2 as on jax's own ragged_paged_attention
("'ReshapeTransform' object has no attribute 'indices'", measured): `cannot_run` says so
per mode, measured once per process, and its program is checked all the same. The declared
conventions below are therefore unmeasured by `attngate conform` here: they are the
reference's, and the conservative ones where the reference says nothing (unreadable slots).
"""
from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..api import Case, KernelAdapter, Mode, Tensors, as_output, operand, tpu_generation
from .paged import DENSE, probe_failure

DISTRIBUTION = "tpu-inference"
WRITTEN_FOR = "0.25.0"
KERNEL_MODULE = "tpu_inference.kernels.ragged_paged_attention.v3.kernel"


def load_kernel_module() -> types.ModuleType:
    """The v3 kernel module of the installed tpu-inference, without the package's `__init__`.
    Raises ImportError naming the installed version when it is not WRITTEN_FOR, and naming
    both when jax is not the version it pins."""
    try:
        installed = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as e:
        raise ImportError(f"{DISTRIBUTION} is not installed in {sys.prefix} (ci/install-deps.sh installs "
                          f"{DISTRIBUTION}=={WRITTEN_FOR} into .venv/jax-new from requirements-new-nodeps.lock)") from e
    if installed != WRITTEN_FOR:
        raise ImportError(f"{DISTRIBUTION} {installed} is installed; attngate_jax.kernels.tpu_inference loads "
                          f"{DISTRIBUTION} {WRITTEN_FOR} only (its kernel module's imports are checked per release)")
    pins = [r.split("==", 1)[1].split(";")[0].strip() for r in importlib.metadata.requires(DISTRIBUTION) or []
            if r.replace(" ", "").startswith("jax==")]
    if pins and pins[0] != jax.__version__:
        raise ImportError(f"{DISTRIBUTION} {installed} pins jax {pins[0]}; this venv has jax {jax.__version__}")
    if "tpu_inference" in sys.modules:
        return importlib.import_module(KERNEL_MODULE)  # the real package, imported by someone else: its own
    spec = importlib.util.find_spec("tpu_inference")
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{DISTRIBUTION} {installed} has no tpu_inference package in {sys.prefix}")
    package = types.ModuleType("tpu_inference")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    before = set(sys.modules)
    sys.modules["tpu_inference"] = package
    try:
        kernel = importlib.import_module(KERNEL_MODULE)
    except BaseException:
        for name in set(sys.modules) - before:  # leave no bare package behind for a later real import
            del sys.modules[name]
        raise
    kernel.get_tpu_version = _tpu_version  # type: ignore[attr-defined]  # see the module's docstring
    return kernel


def _tpu_version() -> int:
    generation = tpu_generation()
    return -1 if generation is None else generation


rpa = load_kernel_module()

# Probe outcomes per interpret mode: None (runs) or what it raised.
_PROBED: dict[str, str | None] = {}


def _distribution(q_lens: tuple[int, ...]) -> np.ndarray:
    decode = next((i for i, n in enumerate(q_lens) if n != 1), len(q_lens))
    return np.asarray([decode, decode, len(q_lens)], np.int32)


def _new_tokens(pages: np.ndarray, case: Case, t: Tensors) -> np.ndarray:
    """[T, Hkv, D]: each sequence's last q_len tokens, gathered from a pool through its pages."""
    assert case.paged is not None
    size, table, rows = case.paged.page_size, t["page_table"], []
    for b, (q_len, kv_len) in enumerate(zip(case.paged.q_lens, case.paged.kv_lens)):
        for pos in range(kv_len - q_len, kv_len):
            rows.append(pages[table[b, pos // size], pos % size])
    return np.stack(rows)


class TpuInferenceRpa(KernelAdapter):
    api_version = 1
    name = "tpu-inference-rpa"
    packages = (DISTRIBUTION,)
    features = ("paged_kv", "ragged", "causal", "window", "softcap", "gqa", "f32", "bf16")
    masked_nan_leaks = ("v",)  # masked scores replaced by mask_value (jnp.where); 0 * NaN in V
    reads_unreadable_slots = ("past_kv_len", "outside_table")  # whole kv blocks of pages (unmeasured)
    rounds_to_case_dtype = ("output", "probabilities")
    workspace_growth = "constant"
    notes = {"layout": "q [T, Hq, D]; keys, values [T, Hkv, D]; kv_cache [pages, page_size, 2 Hkv / packing, "
                       "packing, D to 128] (merge_kv)",
             "distribution": "(decode, decode, sequences): the leading q_len == 1 sequences decode, the rest mixed",
             "scale": "sm_scale after q.k, then soft_cap", "window": "sliding_window = left + 1",
             "precision": "out_dtype at its default (vLLM's): a bf16 case's max, denominator and accumulator in bf16",
             "head_dim 64": "declined: vLLM runs kernel_hd64 there, which the loader does not load"}

    def description(self, mode: Mode) -> str:
        return f"{KERNEL_MODULE}.ragged_paged_attention ({DISTRIBUTION} {WRITTEN_FOR}, {mode.description})"

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        if case.paged is None:
            return DENSE.format(self.name)
        if case.head_dim_v != case.head_dim:
            return f"head_dim_v {case.head_dim_v} != head_dim {case.head_dim}: one interleaved K/V cache"
        if case.head_dim == 64:
            return ("head_dim 64: vLLM runs tpu-inference's kernel_hd64 there, whose module imports "
                    "tpu_inference.logger and utils (vLLM, torch), not loaded here")
        if case.has_window and not case.causal and case.paged.ragged:
            return (f"window {list(case.window)} without causal on a ragged batch: sliding_window applies inside "
                    "use_causal_mask only")
        return None

    def cannot_run(self, case: Case, mode: Mode) -> str | None:
        if mode.mode not in _PROBED:
            _PROBED[mode.mode] = self._probe(mode)
        return _PROBED[mode.mode]

    def _probe(self, mode: Mode) -> str | None:
        """None when the kernel runs here, else what it raised on a 2-sequence case."""
        # Keys and values are separate arrays: the kernel donates both, and one buffer cannot be donated twice.
        q, k, v = (jnp.zeros((3, h, 128), jnp.float32) for h in (2, 1, 1))
        cache = jnp.zeros(rpa.get_kv_cache_shape(4, 16, 1, 128, jnp.float32), jnp.float32)
        return probe_failure(mode, "tpu-inference's ragged_paged_attention", lambda: rpa.ragged_paged_attention(
            q, k, v, cache, jnp.array([16, 20], jnp.int32), jnp.arange(4, dtype=jnp.int32),
            jnp.array([0, 1, 3], jnp.int32), jnp.array([1, 1, 2], jnp.int32), sm_scale=0.1)[0])

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        assert case.paged is not None
        k_pages, v_pages = operand(t["k_pages"], case), operand(t["v_pages"], case)
        pages, size, hkv, d = k_pages.shape
        cache = rpa.merge_kv(jnp.asarray(k_pages.reshape(-1, hkv, d)), jnp.asarray(v_pages.reshape(-1, hkv, d)))
        cache = cache.reshape(pages, size, *cache.shape[1:])
        keys, values = _new_tokens(k_pages, case, t), _new_tokens(v_pages, case, t)
        return tuple(jax.device_put((operand(t["q"], case), keys, values, cache, t["kv_lens"],
                                     np.ascontiguousarray(t["page_table"].reshape(-1)), t["cu_q_lens"],
                                     _distribution(case.paged.q_lens))))

    @staticmethod
    def options(case: Case) -> dict[str, Any]:
        """The kernel's keyword arguments for a case (its reference takes the same)."""
        assert case.paged is not None
        left = case.window[0]
        # A decode batch (every q_len 1) is the same under bottom-right causal as without it.
        return {"sm_scale": case.scale, "soft_cap": case.softcap or None, "sliding_window": None if left < 0 else left + 1,
                "use_causal_mask": case.causal or not case.paged.ragged}

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        attend = functools.partial(rpa.ragged_paged_attention, **self.options(case))

        def run(*args: jax.Array) -> jax.Array:
            return attend(*args)[0]  # (output, updated kv_cache)
        return jax.jit(run)

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out)


def make() -> list[KernelAdapter]:
    return [TpuInferenceRpa()]
