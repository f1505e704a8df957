"""The protocol's case object: parsing, validation, and attngate's masking semantics.

Semantics (kernels/include/attngate/kernel_abi.h): score = softcap(scale * q.k) + bias;
query row i sits at key position p = i + offset, offset = Sk - Sq (bottom-right) or 0
(top-left); causal keeps j <= p; a window [l, r] keeps p - l <= j <= p + r (-1:
unbounded); segment ids must match; a row with no allowed key outputs zeros.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


class CaseError(ValueError):
    """A case object that does not follow the protocol; the message names the field."""


@dataclasses.dataclass(frozen=True)
class Case:
    batch: int
    seq_q: int
    seq_k: int
    heads_q: int
    heads_kv: int
    head_dim: int
    head_dim_v: int
    dtype: str            # "f32" or "bf16"
    scale: float          # already rounded to float32, as the kernels use it
    softcap: float        # 0: off
    causal: bool
    top_left: bool
    window: tuple[int, int]  # (left, right), -1: unbounded
    bias_shape: tuple[int, ...] | None
    segment_ids: bool
    block_q: int          # 0: the kernel's default
    block_k: int

    @property
    def offset(self) -> int:
        """Key position of query row 0 for causal masks and windows."""
        return 0 if self.top_left else self.seq_k - self.seq_q

    @property
    def has_window(self) -> bool:
        return self.window[0] >= 0 or self.window[1] >= 0

    @property
    def scale_is_power_of_two(self) -> bool:
        return math.frexp(self.scale)[0] == 0.5

    def required_features(self) -> dict[str, str]:
        """The API feature names a kernel must declare to be given this case, each with
        what in the case needs it (a field added to the protocol adds its feature here,
        so older kernels never see it)."""
        need = {self.dtype: f"dtype {self.dtype}"}
        if self.causal:
            need["causal"] = "causal"
        if self.has_window:
            need["window"] = f"window {list(self.window)}"
        if self.segment_ids:
            need["segment_ids"] = "segment ids"
        if self.bias_shape is not None:
            need["bias"] = "bias"
        if self.softcap > 0:
            need["softcap"] = f"soft-cap {self.softcap:g}"
        if self.heads_q != self.heads_kv:
            need["gqa"] = f"GQA (heads_q {self.heads_q} != heads_kv {self.heads_kv})"
        if self.head_dim_v != self.head_dim:
            need["head_dim_v"] = f"head_dim_v {self.head_dim_v} != head_dim {self.head_dim}"
        return need

    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        b, sq, sk = self.batch, self.seq_q, self.seq_k
        shapes: dict[str, tuple[int, ...]] = {"q": (b, sq, self.heads_q, self.head_dim),
                  "k": (b, sk, self.heads_kv, self.head_dim),
                  "v": (b, sk, self.heads_kv, self.head_dim_v)}
        if self.bias_shape is not None:
            shapes["bias"] = self.bias_shape
        if self.segment_ids:
            shapes["segment_ids_q"] = (b, sq)
            shapes["segment_ids_kv"] = (b, sk)
        return shapes

    def output_shape(self) -> tuple[int, int, int, int]:
        return (self.batch, self.seq_q, self.heads_q, self.head_dim_v)

    def key_range(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inclusive [lo, hi] of the keys causal masking and the window allow per row."""
        pos = rows + self.offset
        lo = np.zeros_like(pos)
        hi = np.full_like(pos, self.seq_k - 1)
        left, right = self.window
        if left >= 0:
            lo = np.maximum(lo, pos - left)
        if right >= 0:
            hi = np.minimum(hi, pos + right)
        if self.causal:
            hi = np.minimum(hi, pos)
        return lo, hi


def _int(obj: dict[str, Any], name: str, lo: int, default: int | None = None) -> int:
    v = obj.get(name, default)
    if v is None or isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise CaseError(f"case.{name}: expected an integer >= {lo}, got {v!r}")
    return v


def _number(obj: dict[str, Any], name: str, default: float | None = None) -> float:
    v = obj.get(name, default)
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise CaseError(f"case.{name}: expected a finite number, got {v!r}")
    return float(v)


def parse_case(obj: Any) -> Case:
    if not isinstance(obj, dict):
        raise CaseError("case: expected an object")
    b = _int(obj, "batch", 1)
    sq, sk = _int(obj, "seq_q", 1), _int(obj, "seq_k", 1)
    hq, hkv = _int(obj, "heads_q", 1), _int(obj, "heads_kv", 1)
    if hq % hkv:
        raise CaseError(f"case.heads_kv: {hkv} does not divide heads_q {hq}")
    d = _int(obj, "head_dim", 1)
    dv = _int(obj, "head_dim_v", 1, d)
    dtype = obj.get("dtype", "f32")
    if dtype not in ("f32", "bf16"):
        raise CaseError(f"case.dtype: expected \"f32\" or \"bf16\", got {dtype!r}")
    scale = float(np.float32(_number(obj, "scale")))
    if not scale > 0:
        raise CaseError(f"case.scale: expected a number > 0, got {obj['scale']!r}")
    softcap = float(np.float32(_number(obj, "softcap", 0.0)))
    if softcap < 0:
        raise CaseError(f"case.softcap: expected a number >= 0, got {softcap}")
    causal = obj.get("causal", False)
    if not isinstance(causal, bool):
        raise CaseError(f"case.causal: expected true or false, got {causal!r}")
    align = obj.get("causal_alignment", "bottom_right")
    if align not in ("bottom_right", "top_left"):
        raise CaseError(f"case.causal_alignment: expected \"bottom_right\" or \"top_left\", got {align!r}")
    window = obj.get("window", [-1, -1])
    if (not isinstance(window, list) or len(window) != 2
            or not all(isinstance(w, int) and not isinstance(w, bool) and w >= -1 for w in window)):
        raise CaseError(f"case.window: expected [left, right], integers >= -1, got {window!r}")
    bias = obj.get("bias_shape")
    full = (b, hq, sq, sk)
    if bias is not None:
        if (not isinstance(bias, list) or len(bias) != 4
                or not all(isinstance(n, int) and n in (1, full[i]) for i, n in enumerate(bias))):
            raise CaseError(f"case.bias_shape: expected null or [b, h, sq, sk], each 1 or the full extent of {list(full)}, got {bias!r}")
        bias = tuple(bias)
    seg = obj.get("segment_ids", False)
    if not isinstance(seg, bool):
        raise CaseError(f"case.segment_ids: expected true or false, got {seg!r}")
    return Case(b, sq, sk, hq, hkv, d, dv, dtype, scale, softcap, causal, align == "top_left",
                (window[0], window[1]), bias, seg, _int(obj, "block_q", 0, 0), _int(obj, "block_k", 0, 0))


def first_row_without_keys(case: Case, seg_q: np.ndarray | None = None,
                           seg_kv: np.ndarray | None = None) -> tuple[int, int] | None:
    """(b, i) of the first query row that no key may attend, or None.

    Works in row chunks so that an 8k x 8k case costs a few MB, not Sq x Sk booleans."""
    rows = np.arange(case.seq_q)
    lo, hi = case.key_range(rows)
    empty = lo > hi
    if seg_q is None or seg_kv is None:
        return (0, int(np.argmax(empty))) if empty.any() else None
    j = np.arange(case.seq_k)
    for b in range(case.batch):
        for start in range(0, case.seq_q, 256):
            sl = slice(start, start + 256)
            ok = ((j[None, :] >= lo[sl, None]) & (j[None, :] <= hi[sl, None])
                  & (seg_kv[b][None, :] == seg_q[b][sl, None]))
            none = ~ok.any(axis=1)
            if none.any():
                return b, start + int(np.argmax(none))
    return None


def nan_at_masked_key(case: Case, data: np.ndarray, seg_q: np.ndarray | None = None,
                      seg_kv: np.ndarray | None = None) -> tuple[int, int, int] | None:
    """(b, j, h) of the first NaN in k or v at a key that some query row may not attend.

    attngate says a masked key changes nothing; kernels that multiply a zero probability
    by V (or add a mask value to a NaN score) let such a NaN through."""
    nan = np.isnan(data).any(axis=3)  # [B, Sk, Hkv]
    if not nan.any():
        return None
    rows = np.arange(case.seq_q)
    lo, hi = case.key_range(rows)
    for b, j, h in zip(*np.nonzero(nan)):
        allowed = (lo <= j) & (j <= hi)
        if seg_q is not None and seg_kv is not None:
            allowed &= seg_q[b] == seg_kv[b][j]
        if not allowed.all():
            return int(b), int(j), int(h)
    return None
