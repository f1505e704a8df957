# What `cmake --install` puts in place, the CMake package find_package(attngate) reads,
# and the .deb (`cpack -G DEB`).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTNGATE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/attngate")
set(ATTNGATE_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/attngate")

install(TARGETS attngate attngate_abi EXPORT attngateTargets RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(FILES kernels/include/attngate/kernel_abi.h DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/attngate")
install(EXPORT attngateTargets NAMESPACE attngate:: DESTINATION "${ATTNGATE_INSTALL_CMAKEDIR}")
configure_package_config_file(cmake/attngateConfig.cmake.in "${CMAKE_CURRENT_BINARY_DIR}/attngateConfig.cmake"
  INSTALL_DESTINATION "${ATTNGATE_INSTALL_CMAKEDIR}" PATH_VARS ATTNGATE_INSTALL_DATADIR)
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/attngateConfigVersion.cmake" COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/attngateConfig.cmake" "${CMAKE_CURRENT_BINARY_DIR}/attngateConfigVersion.cmake"
  cmake/attngateGate.cmake DESTINATION "${ATTNGATE_INSTALL_CMAKEDIR}")

# The data attngate ships, read after the team's own (harness/store/layered_store.hpp): the
# built-in suites, pricing and workloads (so "not priced" is never a team's default), and the
# smoke suite's goldens, memory baselines and numerics baselines (one per dispatch path and
# compiler), and its perf windows (history/smoke: one per machine class recorded, so an installed
# smoke is judged as in the checkout on those classes, until the team's store holds its own).
install(DIRECTORY suites/ DESTINATION "${ATTNGATE_INSTALL_DATADIR}/suites" FILES_MATCHING PATTERN "*.json")
install(FILES baselines/pricing.json DESTINATION "${ATTNGATE_INSTALL_DATADIR}/baselines")
install(DIRECTORY baselines/workloads baselines/memory baselines/numerics DESTINATION "${ATTNGATE_INSTALL_DATADIR}/baselines")
install(DIRECTORY baselines/goldens/smoke DESTINATION "${ATTNGATE_INSTALL_DATADIR}/baselines/goldens")
install(DIRECTORY baselines/history/smoke DESTINATION "${ATTNGATE_INSTALL_DATADIR}/baselines/history")
# `attngate bisect`'s driver (pip, venvs, git), found beside the installed binary.
install(DIRECTORY cli/bisect/ DESTINATION "${ATTNGATE_INSTALL_DATADIR}/bisect" FILES_MATCHING PATTERN "*.py")

# The manual, where Debian keeps a package's documentation (/usr/share/doc/attngate): the README
# with the pages and the example repository it links to, at the same relative paths, so its links
# work there and a --help that names docs/protocol.md names a file on the machine.
# (Not CMAKE_INSTALL_DOCDIR: cached by the first project that includes GNUInstallDirs, it is the
# team's own doc directory when attngate comes in by FetchContent.)
set(ATTNGATE_INSTALL_DOCDIR "${CMAKE_INSTALL_DATAROOTDIR}/doc/attngate")
install(FILES README.md DESTINATION "${ATTNGATE_INSTALL_DOCDIR}")
install(DIRECTORY docs/ DESTINATION "${ATTNGATE_INSTALL_DOCDIR}/docs")
install(FILES kernels/jax/README.md DESTINATION "${ATTNGATE_INSTALL_DOCDIR}/kernels/jax")
install(FILES cmake/attngateGate.cmake DESTINATION "${ATTNGATE_INSTALL_DOCDIR}/cmake")
install(DIRECTORY examples/team-repo DESTINATION "${ATTNGATE_INSTALL_DOCDIR}/examples")

# The attngate-jax wheel, when it was built (target attngate_jax_wheel, not in ALL): a team
# installs the adapter from the .deb with `pip install /usr/share/attngate/python/*.whl`.
install(FILES "${ATTNGATE_JAX_WHEEL}" DESTINATION "${ATTNGATE_INSTALL_DATADIR}/python" OPTIONAL)

# The .deb: its Depends are the runtime packages of the libraries the binary links, found by
# dpkg-shlibdeps (never the -dev packages); OpenBLAS is dlopen()ed by `bench` alone.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME attngate)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "attngate maintainers <attngate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "regression gate for attention kernels: goldens, numerics, memory, throughput, cost")
set(CPACK_PACKAGE_INSTALL_DIRECTORY /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libopenblas0-pthread")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "valgrind")
include(CPack)
