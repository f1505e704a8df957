#[=======================================================================[.rst:
attngate_add_gate
-----------------

Registers a CTest test that gates kernels with ``attngate run``: the test passes when the
gate passes (exit 0) and fails on drift (1), bad input (2) or an infrastructure failure (3).
It comes with ``find_package(attngate CONFIG)`` and with attngate's own CMakeLists
(``FetchContent``, ``add_subdirectory``), as ``catch_discover_tests`` comes with Catch2.

.. code-block:: cmake

  attngate_add_gate(<name>
                    [PLUGIN <target-or-path>...]
                    [ADAPTER <command-line>...]
                    [SUITE <file-or-name>]
                    [CONFIG <attngate.toml>]
                    [WORKING_DIRECTORY <dir>]
                    [OUTPUT_DIR <dir>]
                    [EXTRA_ARGS <arg>...]
                    [LABELS <label>...]
                    [TIMEOUT <seconds>])

``<name>``
  The test is named ``attngate.<name>``.

``PLUGIN``
  Kernel plugins to gate: a library target (its built file is passed, so the test always
  gates this build of it) or a path. Replaces the ``plugins`` of ``attngate.toml``.

``ADAPTER``
  Adapter command lines (``attngate-jax-adapter --kernels pkg.mod:make``).

``SUITE``
  A suite file or name. Without it, ``suite`` of ``attngate.toml`` is used.

``CONFIG``
  The settings file; by default the nearest ``attngate.toml`` from ``WORKING_DIRECTORY`` up.

``WORKING_DIRECTORY``
  Where attngate runs; default ``CMAKE_CURRENT_SOURCE_DIR`` (so the repository's
  ``attngate.toml``, suites and baselines are found as from a shell there).

``OUTPUT_DIR``
  Where ``results.json`` and the reports (``report.html``, ``summary.md``, ``junit.xml``,
  ``gbench.json``) go;
  default ``${CMAKE_CURRENT_BINARY_DIR}/attngate/<name>``. They replace ``[report]`` of
  ``attngate.toml``, so a test never writes into the source tree; a report flag in
  ``EXTRA_ARGS`` replaces that one.

``EXTRA_ARGS``
  More arguments to ``attngate run`` (``--checks golden,memory``, ``--html report.html``).

``LABELS``
  CTest labels besides ``attngate``.

``TIMEOUT``
  The test's timeout in seconds (default 1500).
#]=======================================================================]
function(attngate_add_gate name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SUITE;CONFIG;WORKING_DIRECTORY;OUTPUT_DIR;TIMEOUT" "PLUGIN;ADAPTER;EXTRA_ARGS;LABELS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "attngate_add_gate(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET attngate::attngate)
    message(FATAL_ERROR "attngate_add_gate(${name}): no attngate::attngate target; find_package(attngate CONFIG) first")
  endif()
  if(NOT arg_WORKING_DIRECTORY)
    set(arg_WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  if(NOT arg_OUTPUT_DIR)
    set(arg_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/attngate/${name}")
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 1500)
  endif()
  set(args)
  if(arg_CONFIG)
    list(APPEND args --config "${arg_CONFIG}")
  endif()
  list(APPEND args run --out "${arg_OUTPUT_DIR}/results.json")
  if(arg_SUITE)
    list(APPEND args --suite "${arg_SUITE}")
  endif()
  foreach(plugin IN LISTS arg_PLUGIN)
    if(TARGET "${plugin}")
      list(APPEND args --plugin "$<TARGET_FILE:${plugin}>")
    else()
      list(APPEND args --plugin "${plugin}")
    endif()
  endforeach()
  foreach(adapter IN LISTS arg_ADAPTER)
    list(APPEND args --adapter "${adapter}")
  endforeach()
  foreach(report html:report.html markdown:summary.md junit:junit.xml gbench:gbench.json)
    string(REPLACE ":" ";" report "${report}")
    list(GET report 0 flag)
    list(GET report 1 file)
    set(given ${arg_EXTRA_ARGS})
    list(FILTER given INCLUDE REGEX "^--${flag}(=|$)")
    if(NOT given)
      list(APPEND args "--${flag}" "${arg_OUTPUT_DIR}/${file}")
    endif()
  endforeach()
  list(APPEND args ${arg_EXTRA_ARGS})
  add_test(NAME "attngate.${name}" COMMAND attngate::attngate ${args} WORKING_DIRECTORY "${arg_WORKING_DIRECTORY}")
  set_tests_properties("attngate.${name}" PROPERTIES LABELS "attngate;${arg_LABELS}" TIMEOUT "${arg_TIMEOUT}")
endfunction()
