"""tpu-inference-rpa's mapping (prepare, and the kernel's keyword arguments) run through
tpu-inference's own XLA reference, ref_ragged_paged_attention, which runs on a CPU where the
kernel cannot: attngate's goldens then check the mapping the kernel's program is lowered
with. `adapter.py --kernels rpa_reference:make`. out_dtype is float32 here (the kernel's
default keeps a bf16 case's accumulator in bf16): the layout, the distribution and the masks
are what this checks, not the kernel's precision."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from attngate_jax.api import Case, KernelAdapter, Mode
from attngate_jax.kernels.tpu_inference import TpuInferenceRpa, rpa


class RpaReference(TpuInferenceRpa):
    name = "tpu-inference-rpa-reference"

    def cannot_run(self, case: Case, mode: Mode) -> str | None:
        return None

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        options = self.options(case)

        def run(*args: Any) -> Any:  # not jitted: the reference loops over the concrete distribution
            return rpa.ref_ragged_paged_attention(*args, out_dtype=jnp.float32, **options)[0]
        return run


def make() -> list[KernelAdapter]:
    return [RpaReference()]
