# cohort_python_site_dirs(<out-var>): the site-packages folders where pip installs CUDA's and
# NCCL's wheels (nvidia/cu13, nvidia/cuda_runtime, nvidia/nccl), for the GPU machine whose CUDA
# and NCCL come with PyTorch's Python install rather than a system toolkit. Looks in the
# site-packages of $COHORT_PYTHON (else python3 on PATH, else /opt/torch/.venv/bin/python3) and
# of /opt/torch/.venv. Empty when there is no Python; never an error.
function(cohort_python_site_dirs out)
  set(dirs "")
  find_program(COHORT_PYTHON NAMES python3 python
    HINTS ENV COHORT_PYTHON ENV VIRTUAL_ENV /opt/torch/.venv/bin PATH_SUFFIXES bin)
  if(COHORT_PYTHON)
    execute_process(
      COMMAND ${COHORT_PYTHON} -c
        "import site, sys; print(';'.join(site.getsitepackages() + [site.getusersitepackages()]))"
      OUTPUT_VARIABLE python_sites OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
      RESULT_VARIABLE python_rc TIMEOUT 30)
    if(python_rc EQUAL 0)
      list(APPEND dirs ${python_sites})
    endif()
  endif()
  file(GLOB venv_sites /opt/torch/.venv/lib/python3*/site-packages)
  list(APPEND dirs ${venv_sites})
  list(REMOVE_DUPLICATES dirs)
  set(${out} "${dirs}" PARENT_SCOPE)
endfunction()
