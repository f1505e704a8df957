"""attngate's JAX adapter: serves JAX and Pallas attention kernels over attngate's remote
protocol (docs/protocol.md). A team's kernel imports its public API, `attngate_jax.api`;
the other modules are the adapter's own and may change in any release."""
# The distribution's version (pyproject.toml reads it): attngate's own, CMakeLists.txt's
# project(VERSION), which the wheel's build (kernels/jax/build-wheel.sh) holds it to.
__version__ = "0.2.0"
# The remote protocol this adapter speaks; the harness refuses any other at GET /v1/hello.
PROTOCOL = 1
ADAPTER = "attngate-jax"
VERSION = __version__
