# Decides whether the Python package is built (CHORUS_PYTHON, top-level CMakeLists.txt) and finds
# what it needs: the interpreter of the virtual environment scripts/install_deps.sh makes
# (CHORUS_VENV, default /opt/chorus/venv: Debian's Python 3.11 with the pins of
# python/requirements.txt, PyTorch 2.x among them), Python's headers, and the headers and
# libraries inside that PyTorch, including the pybind11 it was built with (an extension that
# shares types with torch must use the same pybind11). Sets CHORUS_PYTHON_ENABLED.

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

if(DEFINED ENV{CHORUS_VENV})
  set(chorus_venv_default $ENV{CHORUS_VENV})
else()
  set(chorus_venv_default /opt/chorus/venv)
endif()
set(CHORUS_VENV ${chorus_venv_default} CACHE PATH
    "Virtual environment with PyTorch 2.x the Python package is built for (scripts/install_deps.sh)")
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS ${CHORUS_VENV}/bin/python)
  set(Python3_EXECUTABLE ${CHORUS_VENV}/bin/python)
endif()

# Every problem found is one line of `missing`; ON turns them into an error, AUTO into a notice.
set(missing)
if(NOT DEFINED Python3_EXECUTABLE)
  list(APPEND missing "the virtual environment ${CHORUS_VENV} (run scripts/install_deps.sh, or "
                      "set CHORUS_VENV or Python3_EXECUTABLE to a Python with torch 2.x)")
else()
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  if(NOT Python3_FOUND)
    list(APPEND missing "python3-dev (Python 3 headers for ${Python3_EXECUTABLE})")
  else()
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
              "import sysconfig, torch, torch.utils.cpp_extension as e; print(torch.__version__); print(','.join(e.include_paths())); print(e.library_paths()[0]); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(sysconfig.get_config_var('EXT_SUFFIX'))"
      RESULT_VARIABLE torch_query OUTPUT_VARIABLE torch_facts ERROR_VARIABLE torch_error
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT torch_query EQUAL 0)
      string(REGEX REPLACE "\n.*" "" torch_error_line "${torch_error}")
      list(APPEND missing "torch for ${Python3_EXECUTABLE} (${torch_error_line}; run "
                          "scripts/install_deps.sh)")
    else()
      string(REPLACE "\n" ";" torch_facts "${torch_facts}")
      list(GET torch_facts 0 CHORUS_TORCH_VERSION)
      list(GET torch_facts 1 torch_include_line)
      list(GET torch_facts 2 CHORUS_TORCH_LIBRARY_DIR)
      list(GET torch_facts 3 torch_cxx11_abi)
      list(GET torch_facts 4 CHORUS_PYTHON_MODULE_SUFFIX)
      string(REPLACE "," ";" CHORUS_TORCH_INCLUDE_DIRS "${torch_include_line}")
      if(CHORUS_TORCH_VERSION VERSION_LESS 2.4)
        list(APPEND missing "torch 2.4 or newer (${Python3_EXECUTABLE} has ${CHORUS_TORCH_VERSION}; "
                            "the backend derives from c10d::Backend of PyTorch 2.x)")
      endif()
      set(CHORUS_TORCH_LIBRARIES)
      foreach(library c10 torch torch_cpu torch_python)
        find_library(CHORUS_TORCH_${library}_LIBRARY ${library} PATHS ${CHORUS_TORCH_LIBRARY_DIR}
                     NO_DEFAULT_PATH)
        if(NOT CHORUS_TORCH_${library}_LIBRARY)
          list(APPEND missing "lib${library}.so in ${CHORUS_TORCH_LIBRARY_DIR}")
        endif()
        list(APPEND CHORUS_TORCH_LIBRARIES ${CHORUS_TORCH_${library}_LIBRARY})
      endforeach()
      set(CHORUS_TORCH_CXX_FLAGS -D_GLIBCXX_USE_CXX11_ABI=${torch_cxx11_abi})
    endif()
  endif()
endif()

if(missing)
  if(CHORUS_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "CHORUS_PYTHON=ON but these are missing: ${missing}. Install them "
                        "(scripts/install_deps.sh does) or configure with -DCHORUS_PYTHON=OFF")
  endif()
  message(STATUS "chorus: not building the Python package; missing: ${missing}")
  return()
endif()

set(CHORUS_PYTHON_ENABLED ON)
# The chorus libraries are linked into the extension module, a shared object. Without semantic
# interposition, position-independent code is as fast as the position-independent executables
# Debian's gcc builds by default.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
add_compile_options(-fno-semantic-interposition)
message(STATUS "chorus: building the Python package for ${Python3_EXECUTABLE} "
               "(torch ${CHORUS_TORCH_VERSION})")
