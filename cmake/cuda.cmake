# Decides whether the GPU executor is built (CHORUS_CUDA, top-level CMakeLists.txt): AUTO builds
# it where nvcc is found, ON requires nvcc, OFF skips it. Sanitizer and fuzzer builds skip it
# (nvcc's host compilation does not take their flags; the Release build compiles the CUDA code
# and the host build of the device interpreter runs under every sanitizer). Sets
# CHORUS_CUDA_ENABLED. Nothing built here needs a GPU to build or to pass the tests.

set(CHORUS_CUDA_ENABLED OFF)
if(CHORUS_CUDA STREQUAL "OFF")
  return()
endif()
if(CHORUS_SANITIZE OR CHORUS_SANITIZE_THREAD OR CHORUS_BUILD_FUZZERS)
  if(CHORUS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "CHORUS_CUDA=ON cannot be combined with sanitizer or fuzzer builds: "
                        "configure those with -DCHORUS_CUDA=OFF (or AUTO)")
  endif()
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(CHORUS_NVCC_PROGRAM nvcc HINTS /usr/local/cuda/bin $ENV{CUDA_HOME}/bin)
  if(CHORUS_NVCC_PROGRAM)
    set(CMAKE_CUDA_COMPILER ${CHORUS_NVCC_PROGRAM})
  endif()
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(CHORUS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "CHORUS_CUDA=ON but no nvcc was found: install the CUDA toolkit (nvcc "
                        "on PATH, in /usr/local/cuda/bin or $CUDA_HOME/bin) or configure with "
                        "-DCHORUS_CUDA=OFF")
  endif()
  message(STATUS "chorus: nvcc not found; the GPU executor is not built (CHORUS_CUDA=AUTO)")
  return()
endif()

# SASS for Turing (7.5), Ampere (8.0; 8.6/8.7/8.9 run it), Hopper (9.0), Blackwell (10.0, 12.0)
# and PTX for later GPUs: what CUDA 13 supports. `-DCHORUS_CUDA_ARCHITECTURES=native` builds for
# the GPUs present only (scripts/gpu_check.sh does).
set(CHORUS_CUDA_ARCHITECTURES "75-real;80-real;90-real;100-real;120" CACHE STRING
    "CUDA architectures of the GPU executor (CMAKE_CUDA_ARCHITECTURES syntax)")
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES ${CHORUS_CUDA_ARCHITECTURES})
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
# CMake 3.25 does not know nvcc's C++20 flag (nvcc has taken -std=c++20 since CUDA 12).
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)
if(CCACHE_PROGRAM)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
set(CHORUS_CUDA_ENABLED ON)
message(STATUS "chorus: GPU executor enabled (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
               "architectures ${CMAKE_CUDA_ARCHITECTURES})")
