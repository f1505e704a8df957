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


# Integer input roles (int32 tensors); every other role is float32.
INT_ROLES = frozenset({"segment_ids_q", "segment_ids_kv", "page_table", "kv_lens", "cu_q_lens"})


@dataclasses.dataclass(frozen=True)
class Paged:
    """A paged KV cache and a ragged batch (docs/paged.md): sequence b has q_lens[b] queries,
    its last q_lens[b] of kv_lens[b] keys; key j of b is slot j % page_size of page
    page_table[b][j // page_size] of a pool of `pages` pages. Always bottom-right aligned."""
    q_lens: tuple[int, ...]
    kv_lens: tuple[int, ...]
    page_size: int
    pages: int
    pages_per_seq: int
    layout: str  # "scattered" or "contiguous": information; the page table says where pages are

    @property
    def ragged(self) -> bool:
        return any(n != 1 for n in self.q_lens)

    @property
    def cu_q_lens(self) -> tuple[int, ...]:
        out = [0]
        for n in self.q_lens:
            out.append(out[-1] + n)
        return tuple(out)

    def pages_of(self, b: int) -> int:
        return -(-self.kv_lens[b] // self.page_size)


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
    paged: Paged | None = None  # a paged case: batch sequences, seq_q their query tokens, seq_k the longest kv_len

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
        if self.paged is not None:
            need["paged_kv"] = "a paged KV cache"
            if self.paged.ragged:
                need["ragged"] = f"ragged queries (q_lens {list(self.paged.q_lens)})"
        return need

    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        b, sq, sk = self.batch, self.seq_q, self.seq_k
        if self.paged is not None:
            p = self.paged
            return {"q": (sq, self.heads_q, self.head_dim),
                    "k_pages": (p.pages, p.page_size, self.heads_kv, self.head_dim),
                    "v_pages": (p.pages, p.page_size, self.heads_kv, self.head_dim_v),
                    "page_table": (b, p.pages_per_seq), "kv_lens": (b,), "cu_q_lens": (b + 1,)}
        shapes: dict[str, tuple[int, ...]] = {"q": (b, sq, self.heads_q, self.head_dim),
                  "k": (b, sk, self.heads_kv, self.head_dim),
                  "v": (b, sk, self.heads_kv, self.head_dim_v)}
        if self.bias_shape is not None:
            shapes["bias"] = self.bias_shape
        if self.segment_ids:
            shapes["segment_ids_q"] = (b, sq)
            shapes["segment_ids_kv"] = (b, sk)
        return shapes

    def output_shape(self) -> tuple[int, ...]:
        if self.paged is not None:
            return (self.seq_q, self.heads_q, self.head_dim_v)  # [total_q, Hq, Dv]
        return (self.batch, self.seq_q, self.heads_q, self.head_dim_v)

    def sequence_key_range(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """A paged case's inclusive [lo, hi] of the keys each query of sequence b may attend
        (bottom-right: query i sits at key kv_len - q_len + i)."""
        assert self.paged is not None
        q_len, kv_len = self.paged.q_lens[b], self.paged.kv_lens[b]
        one = dataclasses.replace(self, batch=1, seq_q=q_len, seq_k=kv_len, top_left=False, paged=None)
        return one.key_range(np.arange(q_len))

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
    paged = _paged(obj.get("paged"), b, sq, sk)
    if paged is not None and (bias is not None or seg or align == "top_left"):
        raise CaseError("case.paged: a paged case has no bias, no segment ids and bottom-right alignment")
    return Case(b, sq, sk, hq, hkv, d, dv, dtype, scale, softcap, causal, align == "top_left",
                (window[0], window[1]), bias, seg, _int(obj, "block_q", 0, 0), _int(obj, "block_k", 0, 0), paged)


def _lengths(obj: dict[str, Any], name: str, n: int) -> tuple[int, ...]:
    v = obj.get(name)
    if (not isinstance(v, list) or len(v) != n
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v)):
        raise CaseError(f"case.paged.{name}: expected {n} integers >= 1 (one per sequence), got {v!r}")
    return tuple(v)


def _paged(obj: Any, batch: int, seq_q: int, seq_k: int) -> Paged | None:
    """The case's "paged" object, checked against batch, seq_q and seq_k, or None."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise CaseError("case.paged: expected null or an object")
    q_lens, kv_lens = _lengths(obj, "q_lens", batch), _lengths(obj, "kv_lens", batch)
    for b, (q, k) in enumerate(zip(q_lens, kv_lens)):
        if q > k:
            raise CaseError(f"case.paged.q_lens[{b}]: {q} queries over {k} keys")
    if sum(q_lens) != seq_q or max(kv_lens) != seq_k:
        raise CaseError(f"case.paged: seq_q {seq_q} must be the sum of q_lens ({sum(q_lens)}) "
                        f"and seq_k {seq_k} the longest kv_len ({max(kv_lens)})")
    ps = _int(obj, "page_size", 1)
    per_seq = _int(obj, "pages_per_seq", 1)
    need = max(-(-k // ps) for k in kv_lens)
    if per_seq < need:
        raise CaseError(f"case.paged.pages_per_seq: {per_seq}, but the longest sequence holds {need} pages")
    pages = _int(obj, "pages", need)
    layout = obj.get("layout", "scattered")
    if layout not in ("scattered", "contiguous"):
        raise CaseError(f"case.paged.layout: expected \"scattered\" or \"contiguous\", got {layout!r}")
    return Paged(q_lens, kv_lens, ps, pages, per_seq, layout)


def first_row_without_keys(case: Case, seg_q: np.ndarray | None = None,
                           seg_kv: np.ndarray | None = None) -> tuple[int, int] | None:
    """(b, i) of the first query row that no key may attend, or None.

    Works in row chunks so that an 8k x 8k case costs a few MB, not Sq x Sk booleans.
    A paged case has none: bottom-right, each query may attend its own key position."""
    if case.paged is not None:
        return None
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
