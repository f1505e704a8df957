# The attngate-jax wheel (kernels/jax/pyproject.toml), built offline by build-wheel.sh:
#   cmake --build BUILD --target attngate_jax_wheel  ->  BUILD/dist/attngate_jax-<version>-py3-none-any.whl
# Not in ALL: it needs pip, setuptools and wheel for ATTNGATE_PYTHON (Debian's python3-pip,
# python3-setuptools, python3-wheel), which building the binary does not. The wheel's
# version must be attngate's (project VERSION): build-wheel.sh fails otherwise.
# The package's files by glob, re-read at build time: a new module needs no edit here.
file(GLOB_RECURSE _attngate_jax_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_LIST_DIR}/attngate_jax/*.py")
set(ATTNGATE_JAX_WHEEL "${CMAKE_BINARY_DIR}/dist/attngate_jax-${PROJECT_VERSION}-py3-none-any.whl")
add_custom_command(OUTPUT "${ATTNGATE_JAX_WHEEL}"
  COMMAND ${CMAKE_COMMAND} -E env "PYTHON=${ATTNGATE_PYTHON}"
          bash "${CMAKE_CURRENT_LIST_DIR}/build-wheel.sh" "${CMAKE_BINARY_DIR}/dist" "${PROJECT_VERSION}"
  DEPENDS "${CMAKE_CURRENT_LIST_DIR}/build-wheel.sh" "${CMAKE_CURRENT_LIST_DIR}/pyproject.toml"
          "${CMAKE_CURRENT_LIST_DIR}/attngate_jax/py.typed" ${_attngate_jax_sources}
  COMMENT "attngate-jax wheel (offline): ${ATTNGATE_JAX_WHEEL}"
  VERBATIM)
add_custom_target(attngate_jax_wheel DEPENDS "${ATTNGATE_JAX_WHEEL}")
