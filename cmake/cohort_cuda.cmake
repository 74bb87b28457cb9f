# The GPU build (COHORT_CUDA=ON, docs/design/0013-gpus.md): finds the CUDA runtime and NCCL and
# defines the imported targets CUDA::cudart and NCCL::nccl. Cohort compiles no CUDA kernels:
# only host code calling the runtime and NCCL, so no CUDA compiler is needed.
#
# CUDA: CMake's FindCUDAToolkit (a toolkit with nvcc: -DCUDAToolkit_ROOT=..., $CUDA_PATH,
# /usr/local/cuda); failing that, the runtime alone (cuda_runtime.h, libcudart.so*) in
# $CUDA_HOME / -DCOHORT_CUDART_ROOT or in pip's nvidia-cuda-runtime wheel under a Python
# site-packages (nvidia/cu13 for CUDA 13, nvidia/cuda_runtime for CUDA 12).
# NCCL: cmake/FindNCCL.cmake ($NCCL_ROOT, the toolkit, pip's nvidia/nccl).

list(APPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_LIST_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/cohort_python_sites.cmake)

find_package(CUDAToolkit QUIET)
if(NOT TARGET CUDA::cudart)
  cohort_python_site_dirs(_cohort_sites)
  set(_cudart_hints ${COHORT_CUDART_ROOT} $ENV{CUDA_HOME} /usr/local/cuda)
  foreach(site IN LISTS _cohort_sites)
    list(APPEND _cudart_hints ${site}/nvidia/cu13 ${site}/nvidia/cuda_runtime)
  endforeach()
  find_path(COHORT_CUDART_INCLUDE_DIR cuda_runtime.h HINTS ${_cudart_hints}
    PATH_SUFFIXES include)
  find_library(COHORT_CUDART_LIBRARY NAMES cudart libcudart.so.13 libcudart.so.12 NAMES_PER_DIR
    HINTS ${_cudart_hints} PATH_SUFFIXES lib lib64)
  if(NOT COHORT_CUDART_INCLUDE_DIR OR NOT COHORT_CUDART_LIBRARY)
    message(FATAL_ERROR
      "COHORT_CUDA=ON needs the CUDA runtime (cuda_runtime.h and libcudart.so): none found by "
      "FindCUDAToolkit nor under ${_cudart_hints}; pass -DCUDAToolkit_ROOT=/path/to/cuda or "
      "-DCOHORT_CUDART_ROOT=DIR (with include/ and lib/)")
  endif()
  add_library(CUDA::cudart UNKNOWN IMPORTED)
  set_target_properties(CUDA::cudart PROPERTIES
    IMPORTED_LOCATION "${COHORT_CUDART_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${COHORT_CUDART_INCLUDE_DIR}")
  message(STATUS "CUDA runtime (without a toolkit): ${COHORT_CUDART_LIBRARY}")
else()
  message(STATUS "CUDA toolkit ${CUDAToolkit_VERSION}: ${CUDAToolkit_LIBRARY_DIR}")
endif()

find_package(NCCL REQUIRED)
message(STATUS "NCCL ${NCCL_VERSION}: ${NCCL_LIBRARY} (headers: ${NCCL_INCLUDE_DIR})")

# PyTorch's pip wheels load CUDA's libraries (cuBLAS, cuDNN, NCCL, ...) from the nvidia/*/lib
# folders beside them, through their own RUNPATH. Linking an executable against such a LibTorch
# makes the linker look for those libraries too: name the folders for it (link time only; at run
# time the wheels' RUNPATH finds them as it does for Python).
cohort_python_site_dirs(_cohort_sites)
foreach(site IN LISTS _cohort_sites)
  file(GLOB _cohort_nvidia_libs LIST_DIRECTORIES true ${site}/nvidia/*/lib ${site}/torch/lib)
  foreach(dir IN LISTS _cohort_nvidia_libs)
    if(IS_DIRECTORY ${dir})
      string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,-rpath-link,${dir}")
    endif()
  endforeach()
endforeach()
