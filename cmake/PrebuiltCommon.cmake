# course_common from another build tree (COURSE_PREBUILT_COMMON=DIR), instead of compiling
# common/ again. The grader's self-test (tests/grader/test_grader.py) configures its
# learner's copies so: each copy's common/ is the reference's, file for file, and compiling
# it again cost each copy about a minute of the 2 cores that CTest runs on beside it.
#
# What makes this safe, checked when the copy is configured:
#   - DIR/common/course_common_prebuilt.cmake, written by DIR's own configure, says where
#     DIR's archive is, which source tree it was compiled from, and whether Gloo, CUDA and
#     NCCL were compiled in (the archive's objects call them, so this build links them);
#   - every file of this tree's common/ is the same as that source tree's (the first that
#     differs is named: configure without COURSE_PREBUILT_COMMON, or export again).
# The copy compiles its own code with its own flags; only common/'s objects come from DIR.
#
# What this is not: a package. The archive is linked where it lies; DIR must stay built.
set(COURSE_PREBUILT_COMMON "" CACHE PATH
    "A build tree of the same common/ whose course_common to link instead of compiling one")

# The record DIR's configure writes (common/CMakeLists.txt), read back by
# course_read_prebuilt_common below.
function(course_write_prebuilt_record)
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/common/course_common_prebuilt.cmake CONTENT
"# Written by this build tree's configure (cmake/PrebuiltCommon.cmake): what a build with
# COURSE_PREBUILT_COMMON=${CMAKE_BINARY_DIR} links and checks.
set(COURSE_PREBUILT_LIBRARY \"$<TARGET_FILE:course_common>\")
set(COURSE_PREBUILT_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
set(COURSE_PREBUILT_HAVE_GLOO ${COURSE_HAVE_GLOO})
set(COURSE_PREBUILT_HAVE_CUDA ${COURSE_HAVE_CUDA})
set(COURSE_PREBUILT_HAVE_NCCL ${COURSE_HAVE_NCCL})
set(COURSE_PREBUILT_CUDA_BIN_DIR \"${CUDAToolkit_BIN_DIR}\")
set(COURSE_PREBUILT_NCCL_LIBRARY \"${NCCL_LIBRARY}\")
set(COURSE_PREBUILT_NCCL_INCLUDE_DIR \"${NCCL_INCLUDE_DIR}\")
")
endfunction()

# Reads DIR's record into the caller's scope (COURSE_PREBUILT_*), or stops the configure
# saying what to do.
macro(course_read_prebuilt_common dir)
  set(_record ${dir}/common/course_common_prebuilt.cmake)
  if(NOT EXISTS ${_record})
    message(FATAL_ERROR "COURSE_PREBUILT_COMMON=${dir}: no ${_record}. Configure and build that "
                        "tree first (cmake --build ${dir} --target course_common), or configure "
                        "without COURSE_PREBUILT_COMMON to compile common/ here")
  endif()
  include(${_record})
  if(NOT EXISTS "${COURSE_PREBUILT_LIBRARY}")
    message(FATAL_ERROR "COURSE_PREBUILT_COMMON=${dir}: ${COURSE_PREBUILT_LIBRARY} is not built: "
                        "cmake --build ${dir} --target course_common")
  endif()
endmacro()

# Stops the configure unless the files of `mine`/common are those of `theirs`/common: the
# same names (of the sources, headers and CMakeLists.txt) and the same bytes.
function(course_check_same_common mine theirs)
  set(kinds *.h *.cpp *.cu CMakeLists.txt)
  list(TRANSFORM kinds PREPEND ${mine}/common/ OUTPUT_VARIABLE mine_globs)
  list(TRANSFORM kinds PREPEND ${theirs}/common/ OUTPUT_VARIABLE their_globs)
  file(GLOB_RECURSE mine_files RELATIVE ${mine}/common ${mine_globs})
  file(GLOB_RECURSE their_files RELATIVE ${theirs}/common ${their_globs})
  set(advice "the prebuilt course_common (COURSE_PREBUILT_COMMON) was compiled from other "
             "sources: configure without COURSE_PREBUILT_COMMON to compile common/ here, or "
             "export this copy again from ${theirs}")
  foreach(f IN LISTS their_files)
    if(NOT f IN_LIST mine_files)
      message(FATAL_ERROR "common/${f} is in ${theirs} and not in ${mine}: ${advice}")
    endif()
  endforeach()
  foreach(f IN LISTS mine_files)
    if(NOT EXISTS ${theirs}/common/${f})
      message(FATAL_ERROR "common/${f} is in ${mine} and not in ${theirs}: ${advice}")
    endif()
    file(SHA256 ${mine}/common/${f} a)
    file(SHA256 ${theirs}/common/${f} b)
    if(NOT a STREQUAL b)
      message(FATAL_ERROR "common/${f} differs between ${mine} and ${theirs}: ${advice}")
    endif()
  endforeach()
endfunction()
