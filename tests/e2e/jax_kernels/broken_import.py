"""A kernel module whose import fails, as one does after a bump removes what it imports."""
from jax.experimental.pallas.ops.tpu import no_such_kernel  # noqa: F401


def make():
    raise AssertionError("never reached")
