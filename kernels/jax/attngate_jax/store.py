"""Tensors and files the adapter holds for the harness, by name."""
from __future__ import annotations

import re
import threading

import numpy as np

NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}\Z")


class Store:
    """A thread-safe dict of named numpy arrays plus a dict of named byte blobs (profiles).

    Every put gets a new version number, so caches keyed by (name, version) never serve
    data derived from a tensor that has since been replaced."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tensors: dict[str, tuple[np.ndarray, int]] = {}
        self._files: dict[str, bytes] = {}
        self._version = 0

    def put(self, name: str, array: np.ndarray) -> None:
        with self._lock:
            self._version += 1
            self._tensors[name] = (array, self._version)

    def get(self, name: str) -> tuple[np.ndarray, int] | None:
        """(array, version) or None."""
        with self._lock:
            return self._tensors.get(name)

    def delete(self, name: str) -> bool:
        with self._lock:
            return self._tensors.pop(name, None) is not None

    def clear(self) -> None:
        with self._lock:
            self._tensors.clear()

    def put_file(self, name: str, data: bytes) -> None:
        with self._lock:
            self._files[name] = data

    def get_file(self, name: str) -> bytes | None:
        with self._lock:
            return self._files.get(name)

    def delete_file(self, name: str) -> bool:
        with self._lock:
            return self._files.pop(name, None) is not None
