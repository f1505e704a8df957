"""A blocked attention in Pallas: one program per (batch, query head, query block), an
online softmax over the key blocks. Knows nothing of attngate.

Its conventions: layout [B, H, S, D]; `sm_scale` multiplies q.k; causal keeps key
j <= i + offset (offset = Sk - Sq is bottom-right, 0 top-left); query head h reads kv
head h // (Hq / Hkv); a row with no allowed key outputs zeros; the probabilities
exp(s - max) are cast to V's dtype before P.V, accumulated in f32.
"""
from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(q_ref: Any, k_ref: Any, v_ref: Any, o_ref: Any, *, sm_scale: float, causal: bool, offset: int, block_q: int, block_k: int,
            seq_k: int) -> None:
    q = q_ref[...]
    qi = pl.program_id(2)
    rows = qi * block_q + jax.lax.broadcasted_iota(jnp.int32, (block_q, block_k), 0)

    def body(j: jax.Array, carry: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
        m, l, acc = carry
        kb = k_ref[pl.ds(j * block_k, block_k), :]
        vb = v_ref[pl.ds(j * block_k, block_k), :]
        s = jax.lax.dot_general(q, kb, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32) * sm_scale
        if causal:
            cols = j * block_k + jax.lax.broadcasted_iota(jnp.int32, (block_q, block_k), 1)
            s = jnp.where(cols <= rows + offset, s, -jnp.inf)
        m_new = jnp.maximum(m, s.max(axis=1))
        m_safe = jnp.where(m_new == -jnp.inf, 0.0, m_new)  # a row with no key yet: no NaN from -inf - -inf
        p = jnp.exp(s - m_safe[:, None])
        alpha = jnp.exp(m - m_safe)
        l = alpha * l + p.sum(axis=1)
        acc = alpha[:, None] * acc + jnp.dot(p.astype(vb.dtype), vb, preferred_element_type=jnp.float32)
        return m_new, l, acc

    init = (jnp.full((block_q,), -jnp.inf, jnp.float32), jnp.zeros((block_q,), jnp.float32),
            jnp.zeros((block_q, v_ref.shape[-1]), jnp.float32))
    _, l, acc = jax.lax.fori_loop(0, seq_k // block_k, body, init)
    o_ref[...] = (acc / jnp.where(l == 0, 1.0, l)[:, None]).astype(o_ref.dtype)


def blocked_attention(q: jax.Array, k: jax.Array, v: jax.Array, *, sm_scale: float, causal: bool = False, offset: int = 0,
                      block_q: int = 128, block_k: int = 128, interpret: bool = False) -> jax.Array:
    """q [B, Hq, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv] -> [B, Hq, Sq, Dv] in q's dtype."""
    b, hq, sq, d = q.shape
    hkv, sk, dv = k.shape[1], k.shape[2], v.shape[3]
    group = hq // hkv
    kernel = functools.partial(_kernel, sm_scale=sm_scale, causal=causal, offset=offset, block_q=block_q, block_k=block_k,
                               seq_k=sk)
    return pl.pallas_call(
        kernel,
        grid=(b, hq, sq // block_q),
        in_specs=[pl.BlockSpec((None, None, block_q, d), lambda bi, h, i: (bi, h, i, 0)),
                  pl.BlockSpec((None, None, sk, d), lambda bi, h, i: (bi, h // group, 0, 0)),
                  pl.BlockSpec((None, None, sk, dv), lambda bi, h, i: (bi, h // group, 0, 0))],
        out_specs=pl.BlockSpec((None, None, block_q, dv), lambda bi, h, i: (bi, h, i, 0)),
        out_shape=jax.ShapeDtypeStruct((b, hq, sq, dv), q.dtype),
        interpret=interpret,
    )(q, k, v)
