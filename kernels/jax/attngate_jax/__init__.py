"""attngate's JAX adapter: serves JAX and Pallas attention kernels over the remote protocol
(docs/protocol.md, version 1)."""
PROTOCOL = 1
ADAPTER = "attngate-jax"
VERSION = "1.0.0"
