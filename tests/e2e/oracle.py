"""An independent numpy implementation of attngate's documented semantics.

It reads what `attngate inputs` writes (case.json plus .npy tensors) and computes the
attention output in float64, so the e2e tests can check that the checked-in goldens are
what the documentation says they are. It also re-implements the counter-based input
generator with Python integers, to check that the inputs are bit-for-bit reproducible
outside attngate.
"""
import json
import os

import numpy as np

MASK64 = (1 << 64) - 1


def splitmix64_at(seed, n):
    z = (seed + (n + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) & MASK64
    return h


def uniform_stream(suite_seed, case_id, stream, count, amplitude):
    """U[-a, a) draws of one stream of one case, as float32."""
    key = splitmix64_at(splitmix64_at(suite_seed, fnv1a64(case_id)), fnv1a64(stream))
    ints = np.array([(splitmix64_at(key, n) >> 40) - (1 << 23) for n in range(count)], dtype=np.int64)
    return (ints.astype(np.float32) / np.float32(1 << 23)) * np.float32(amplitude)


def load_case(directory):
    with open(os.path.join(directory, "case.json")) as f:
        desc = json.load(f)
    tensors = {name: np.load(os.path.join(directory, fname)) for name, fname in desc["files"].items()}
    return desc, tensors


def paged_sequences(desc, t):
    """Each sequence of a paged case as a dense case of batch 1: (first query token, its
    case.json shape and tensors), its keys gathered from the pages through its table."""
    paged, shape = desc["paged"], desc["shape"]
    page_size = paged["page_size"]
    hkv, d, dv = shape["heads_kv"], shape["head_dim"], shape["head_dim_v"]
    table, kv_lens, cu = t["page_table"], t["kv_lens"], t["cu_q_lens"]
    for b in range(len(kv_lens)):
        kv_len, q0, q1 = int(kv_lens[b]), int(cu[b]), int(cu[b + 1])
        pages = table[b, :-(-kv_len // page_size)]
        k = t["k_pages"][pages].reshape(-1, hkv, d)[:kv_len]
        v = t["v_pages"][pages].reshape(-1, hkv, dv)[:kv_len]
        sub = dict(desc, shape=dict(shape, batch=1, seq_q=q1 - q0, seq_k=kv_len), causal_alignment="bottom_right")
        sub.pop("paged")
        yield q0, sub, {"q": t["q"][q0:q1][None], "k": k[None], "v": v[None]}


def attention(desc, t, drop_last_key=None, heads=None):
    """float64 attention; a paged case is each of its sequences gathered and attended as a
    dense case of batch 1, into [1, seq_q, heads_q, head_dim_v]."""
    if "paged" in desc:
        shape = desc["shape"]
        out = np.zeros((1, shape["seq_q"], shape["heads_q"], shape["head_dim_v"]))
        for q0, sub, tensors in paged_sequences(desc, t):
            out[0, q0:q0 + sub["shape"]["seq_q"]] = dense_attention(sub, tensors)[0]
        return out
    return dense_attention(desc, t, drop_last_key, heads)


def dense_attention(desc, t, drop_last_key=None, heads=None):
    """float64 attention with bottom-right causal/window alignment, segment ids, bias,
    soft-capping; rows with no allowed key are zero; NaN propagates from allowed keys.
    drop_last_key=(b, i, h) leaves out that row's last allowed key: the exact output of the
    test plugin's one-wrong-row kernel, to tell what its defect changes. heads, a list of
    (b, h), computes only those (the rest stays zero)."""
    shape = desc["shape"]
    B, Sq, Sk = shape["batch"], shape["seq_q"], shape["seq_k"]
    Hq, Hkv, Dv = shape["heads_q"], shape["heads_kv"], shape["head_dim_v"]
    q, k, v = (t[n].astype(np.float64) for n in ("q", "k", "v"))
    scale, cap = desc["scale"], desc["softcap"]
    left, right = desc["window"]
    top_left = desc.get("causal_alignment") == "top_left"
    pos = np.arange(Sq)[:, None] + (0 if top_left else Sk - Sq)
    j = np.arange(Sk)[None, :]
    allowed = np.ones((Sq, Sk), dtype=bool)
    if desc["causal"]:
        allowed &= j <= pos
    if left >= 0:
        allowed &= j >= pos - left
    if right >= 0:
        allowed &= j <= pos + right
    bias = t.get("bias")
    out = np.zeros((B, Sq, Hq, Dv))
    for b in range(B):
        mask_b = allowed.copy()
        if "segment_ids_q" in t:
            mask_b &= t["segment_ids_q"][b][:, None] == t["segment_ids_kv"][b][None, :]
        for h in range(Hq):
            if heads is not None and (b, h) not in heads:
                continue
            hk = h // (Hq // Hkv)
            s = (q[b, :, h, :] @ k[b, :, hk, :].T) * scale
            if cap > 0:
                s = cap * np.tanh(s / cap)
            if bias is not None:
                s = s + np.broadcast_to(bias, (B, Hq, Sq, Sk))[b, h].astype(np.float64)
            for i in range(Sq):
                idx = np.nonzero(mask_b[i])[0]
                if drop_last_key == (b, i, h):
                    idx = idx[:-1]
                if idx.size == 0:
                    continue
                row = s[i, idx]
                p = np.exp(row - np.max(row))  # a NaN score makes the max, and the row, NaN
                out[b, i, h, :] = (p / p.sum()) @ v[b, idx, hk, :]
    return out


def golden_mismatch(golden, want):
    """Why a golden is not the oracle's output (shape, NaN pattern, or an error over 1e-9 of
    the output's scale), or None when it is."""
    if golden.shape != want.shape:
        return f"shape {golden.shape} != {want.shape}"
    if not np.array_equal(np.isnan(golden), np.isnan(want)):
        return "NaN in different elements"
    finite = ~np.isnan(want)
    scale = max(1.0, float(np.max(np.abs(want[finite]))))
    error = float(np.max(np.abs(golden[finite] - want[finite])))
    return None if error < 1e-9 * scale else f"max abs error {error:.3g} over 1e-9 x {scale:.3g}"
