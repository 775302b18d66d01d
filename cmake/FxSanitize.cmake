# FX_SANITIZE=address,undefined | thread: every target of this build tree
# (library, tests, mini-apps, the HDF5 plugin) is instrumented, so that a
# report names fx's own frames. Open MPI, HDF5 and Kokkos stay as Debian
# and PyPI built them; scripts/sanitizers/*.supp say which of their reports
# are theirs, each with the reason.
if(FX_SANITIZE)
  if(NOT FX_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
    message(FATAL_ERROR "FX_SANITIZE='${FX_SANITIZE}': expected address,undefined or thread")
  endif()
  # A report needs file:line in every frame: line tables (-g1) where the
  # build type has no debug information of its own.
  add_compile_options(-fsanitize=${FX_SANITIZE} -fno-omit-frame-pointer
                      $<$<NOT:$<OR:$<CONFIG:Debug>,$<CONFIG:RelWithDebInfo>>>:-g1>)
  add_link_options(-fsanitize=${FX_SANITIZE})
  if(FX_SANITIZE MATCHES "undefined")
    # A report stops the rank (a test sees it) and is also kept in the log directory.
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()
if(FX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FX_FUZZ needs clang (libFuzzer), got ${CMAKE_CXX_COMPILER_ID}: ./fx fuzz configures it")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)  # coverage for libFuzzer in every library
endif()
