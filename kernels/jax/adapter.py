"""Launcher: `.venv/jax-new/bin/python kernels/jax/adapter.py ARGS` runs the adapter without
setting PYTHONPATH (same as `PYTHONPATH=kernels/jax python -m attngate_jax ARGS`)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from attngate_jax.__main__ import main  # noqa: E402

sys.exit(main())
