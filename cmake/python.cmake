# Decides whether the Python package is built (CHORUS_PYTHON, top-level CMakeLists.txt) and finds
# what it needs: Debian's /usr/bin/python3 (the interpreter python3-torch installs into, even when
# another python3 comes first on PATH), pybind11 and libtorch. Sets CHORUS_PYTHON_ENABLED.

set(CHORUS_PYTHON_ENABLED OFF)
if(CHORUS_PYTHON STREQUAL "OFF")
  return()
endif()
if(CHORUS_SANITIZE OR CHORUS_SANITIZE_THREAD OR CHORUS_BUILD_FUZZERS)
  # A sanitized extension would need the sanitizer runtime preloaded into python3.
  if(CHORUS_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "CHORUS_PYTHON=ON cannot be combined with sanitizer or fuzzer builds")
  endif()
  return()
endif()

if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
if(Python3_FOUND)
  find_package(pybind11 CONFIG QUIET)
  find_package(Torch QUIET)
  find_library(CHORUS_TORCH_PYTHON_LIBRARY torch_python)
endif()

set(missing)
if(NOT Python3_FOUND)
  list(APPEND missing "python3-dev (Python 3 headers for ${Python3_EXECUTABLE})")
endif()
if(NOT pybind11_FOUND)
  list(APPEND missing "pybind11-dev")
endif()
if(NOT Torch_FOUND OR NOT CHORUS_TORCH_PYTHON_LIBRARY)
  list(APPEND missing "libtorch-dev and python3-torch")
endif()
if(missing)
  if(CHORUS_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "CHORUS_PYTHON=ON but these are missing: ${missing}. Install them "
                        "(scripts/install_deps.sh does) or configure with -DCHORUS_PYTHON=OFF")
  endif()
  message(STATUS "chorus: not building the Python package; missing: ${missing}")
  return()
endif()

execute_process(COMMAND ${Python3_EXECUTABLE} -c "import torch"
                RESULT_VARIABLE torch_import OUTPUT_QUIET ERROR_QUIET)
if(NOT torch_import EQUAL 0)
  if(CHORUS_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "${Python3_EXECUTABLE} cannot import torch: install python3-torch")
  endif()
  message(STATUS "chorus: not building the Python package; ${Python3_EXECUTABLE} cannot "
                 "import torch (install python3-torch)")
  return()
endif()

set(CHORUS_TORCH_CXX_FLAGS ${TORCH_CXX_FLAGS})
separate_arguments(CHORUS_TORCH_CXX_FLAGS)
set(CHORUS_PYTHON_ENABLED ON)
# The chorus libraries are linked into the extension module, a shared object. Without semantic
# interposition, position-independent code is as fast as the position-independent executables
# Debian's gcc builds by default.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
add_compile_options(-fno-semantic-interposition)
message(STATUS "chorus: building the Python package for ${Python3_EXECUTABLE} "
               "(torch ${Torch_VERSION}, pybind11 ${pybind11_VERSION})")
