"""Paged cases in the adapter: the tables checked against the case, the slots no query may
read (attngate fills them with NaN), and NaN at readable keys that some query masks.

Unreadable slots (docs/paged.md): "past_kv_len", the slots past kv_len in a sequence's last
page; "outside_table", every page that no sequence's table holds within its own pages
(the table's padding entries point at such pages).
"""
from __future__ import annotations

import numpy as np

from .case import Case, Paged

UNREADABLE_KINDS = frozenset({"past_kv_len", "outside_table"})


def check_tables(case: Case, page_table: np.ndarray, kv_lens: np.ndarray, cu_q_lens: np.ndarray) -> str | None:
    """Why the uploaded tables disagree with the case object (the kernels build from the
    case's lengths), or None."""
    p = case.paged
    assert p is not None
    if tuple(int(x) for x in kv_lens) != p.kv_lens:
        return f"inputs.kv_lens: {kv_lens.tolist()} != the case's paged.kv_lens {list(p.kv_lens)}"
    if tuple(int(x) for x in cu_q_lens) != p.cu_q_lens:
        return f"inputs.cu_q_lens: {cu_q_lens.tolist()} != the cumulative paged.q_lens {list(p.cu_q_lens)}"
    for b in range(case.batch):
        row = page_table[b, :p.pages_of(b)]
        if ((row < 0) | (row >= p.pages)).any():
            return f"inputs.page_table[{b}]: {row.tolist()} holds a page outside [0, {p.pages})"
    return None


def unreadable_slots(p: Paged, page_table: np.ndarray) -> dict[str, np.ndarray]:
    """Per kind, a [pages, page_size] boolean mask of the pool's unreadable slots."""
    past = np.zeros((p.pages, p.page_size), bool)
    held = np.zeros(p.pages, bool)
    for b, kv_len in enumerate(p.kv_lens):
        n = p.pages_of(b)
        held[page_table[b, :n]] = True
        past[page_table[b, n - 1], kv_len - (n - 1) * p.page_size:] = True
    outside = np.repeat(~held[:, None], p.page_size, axis=1)
    return {"past_kv_len": past & ~outside, "outside_table": outside}


def with_zeros(p: Paged, pools: dict[str, np.ndarray], page_table: np.ndarray,
               kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Copies of the pools with zeros in the unreadable slots of the given kinds."""
    masks = unreadable_slots(p, page_table)
    out = {}
    for role, pool in pools.items():
        pool = pool.copy()
        for kind in kinds:
            pool[masks[kind]] = 0.0
        out[role] = pool
    return out


def nan_at_masked_key(case: Case, pool: np.ndarray, page_table: np.ndarray) -> tuple[int, int, int] | None:
    """(b, j, h) of the first NaN at a readable key j of sequence b that some of its queries
    may not attend (causal within a prefill chunk, a window), or None."""
    p = case.paged
    assert p is not None
    for b, kv_len in enumerate(p.kv_lens):
        pages = page_table[b, :p.pages_of(b)]
        keys = pool[pages].reshape(-1, *pool.shape[2:])[:kv_len]  # [kv_len, Hkv, D]
        nan = np.isnan(keys).any(axis=2)
        if not nan.any():
            continue
        lo, hi = case.sequence_key_range(b)
        for j, h in zip(*np.nonzero(nan)):
            if not ((lo <= j) & (j <= hi)).all():
                return b, int(j), int(h)
    return None
