# FindNCCL: NVIDIA's collective library, for the NCCL communicator (src/comm, COHORT_CUDA).
#
# Looks, in this order, in $NCCL_ROOT / -DNCCL_ROOT, in the CUDA toolkit (CUDAToolkit_LIBRARY_ROOT,
# /usr/local/cuda), and in pip's layout of nvidia-nccl-cu13 / -cu12 under a Python site-packages
# (nvidia/nccl/{include,lib}: the wheel ships only libnccl.so.2, no libnccl.so link).
#
# Provides NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION ("2.28.9") and the imported
# target NCCL::nccl.

include(${CMAKE_CURRENT_LIST_DIR}/cohort_python_sites.cmake)
cohort_python_site_dirs(_nccl_sites)
set(_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} /usr/local/cuda)
foreach(site IN LISTS _nccl_sites)
  list(APPEND _nccl_hints ${site}/nvidia/nccl)
endforeach()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*NCCL_${part} +([0-9]+).*" "\\1" _nccl_${part}
           "${_nccl_version_lines}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
