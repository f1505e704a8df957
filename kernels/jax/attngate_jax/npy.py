"""Strict reading and writing of the .npy bodies of the remote protocol.

A body is checked completely before anything is allocated from it: magic, version,
header syntax and keys, dtype (float32 or int32, little-endian), C order, and that the
shape's byte count equals the data that follows. A hostile header therefore cannot make
the adapter allocate more than the body it already holds.
"""
from __future__ import annotations

import ast
import io
import struct
from typing import Any

import numpy as np

MAGIC = b"\x93NUMPY"
MAX_HEADER_BYTES = 64 * 1024
MAX_DIMS = 8
DTYPES = {"<f4": np.dtype("<f4"), "<i4": np.dtype("<i4")}


class NpyError(ValueError):
    """A body that is not a valid .npy of the protocol; the message says where."""


def parse(body: bytes) -> np.ndarray:
    """Returns a read-only array viewing `body`, or raises NpyError."""
    if len(body) < 10 or body[:6] != MAGIC:
        raise NpyError("bad magic: a .npy body starts with \\x93NUMPY (byte 0)")
    major, minor = body[6], body[7]
    if (major, minor) == (1, 0):
        (hlen,), start = struct.unpack_from("<H", body, 8), 10
    elif (major, minor) in ((2, 0), (3, 0)):
        if len(body) < 12:
            raise NpyError("truncated header length (byte 8)")
        (hlen,), start = struct.unpack_from("<I", body, 8), 12
    else:
        raise NpyError(f"unsupported .npy version {major}.{minor} (byte 6): expected 1.0")
    if hlen > MAX_HEADER_BYTES:
        raise NpyError(f"header length {hlen} (byte 8) exceeds {MAX_HEADER_BYTES}")
    end = start + hlen
    if end > len(body):
        raise NpyError(f"header of {hlen} bytes runs past the body's {len(body)} bytes (byte {start})")
    try:
        text = body[start:end].decode("utf-8" if major == 3 else "latin1")
        header = ast.literal_eval(text)
    except (ValueError, SyntaxError, UnicodeDecodeError) as e:
        raise NpyError(f"header (byte {start}) does not parse: {e}") from None
    descr, shape = _check_header(header, start)
    count = 1
    for n in shape:
        count *= n
    want = count * descr.itemsize
    have = len(body) - end
    if want != have:
        raise NpyError(f"shape {list(shape)} of {descr.name} needs {want} data bytes, "
                       f"the body has {have} after the header (byte {end})")
    arr = np.frombuffer(body, dtype=descr, count=count, offset=end).reshape(shape)
    return arr


def _check_header(header: Any, at: int) -> tuple[np.dtype[Any], tuple[int, ...]]:
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise NpyError(f"header (byte {at}) must be a dict with exactly descr, fortran_order and shape")
    descr = header["descr"]
    if not isinstance(descr, str) or descr not in DTYPES:
        raise NpyError(f"dtype {descr!r} (byte {at}): expected '<f4' (float32) or '<i4' (int32)")
    if header["fortran_order"] is not False:
        raise NpyError(f"fortran_order (byte {at}) must be False: tensors are C order")
    shape = header["shape"]
    if (not isinstance(shape, tuple) or len(shape) > MAX_DIMS
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
        raise NpyError(f"shape {shape!r} (byte {at}): expected a tuple of at most {MAX_DIMS} integers >= 0")
    return DTYPES[descr], shape


def serialize(arr: np.ndarray) -> bytes:
    """.npy version 1.0 bytes of a float32 or int32 array, little-endian, C order."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.str not in DTYPES:
        raise ValueError(f"cannot serialize dtype {arr.dtype}")
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, version=(1, 0), allow_pickle=False)
    return buf.getvalue()
