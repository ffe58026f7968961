# course_common from another build tree (COURSE_PREBUILT_COMMON=DIR), instead of compiling
# common/ again, and that tree's test harness, test objects and lessons' given objects. The
# grader's self-test (tests/grader/test_grader.py) configures its learner's copies so: each
# copy's common/, tests/ and given files are the reference's, file for file, and compiling
# them again cost each copy about a minute (common/), then most of what was left (the
# harness, the test files, the given files), of the 2 cores that CTest runs on beside it.
#
# What makes this safe, checked when the copy is configured:
#   - DIR/common/course_common_prebuilt.cmake, written by DIR's own configure, says where
#     DIR's archive is, which source tree it was compiled from, and whether Gloo, CUDA and
#     NCCL were compiled in (the archive's objects call them, so this build links them);
#   - every file of this tree's common/ is the same as that source tree's (the first that
#     differs is named: configure without COURSE_PREBUILT_COMMON, or export again);
#   - DIR/tests/course_tests_prebuilt.cmake names DIR's harness archive and the objects of
#     each lesson's test program (test_NN, tests/NN_topic); they are linked only while
#     every file of tests/ (the grader's own and the scripts' aside) and every header of
#     lessons/ and common/ (which the test files include) is the same as there, none is
#     missing, none added has the name of one there (which an #include could then find
#     instead), and each object is built; otherwise the copy compiles its tests itself,
#     saying why;
#   - the same record names each lesson's given files and their objects (ex_NN_given):
#     where the tests are linked so, a lesson whose given files are all DIR's, byte for
#     byte, links those objects and compiles only its other files (the answers); a lesson
#     with a given file changed (a planted mistake) compiles all of its files.
# Every file compared is a configure dependency: changed later, it is compared again.
# The copy compiles its lessons' answers with its own flags; common/'s objects, the test
# programs' and the given files' come from DIR. Instructors' hidden tests always compile.
#
# What this is not: a package. The archives and objects are linked where they lie; DIR must
# stay built.
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

# The first difference between two trees' files `globs` (relative to each tree, e.g.
# common/*.h, matched in every folder below), as a sentence, or "" when both have the same
# names and the same bytes. Relative paths matching the regex `exclude` (or "") are left out.
# With `new_names_ok` ON, a header only `mine` has is no difference while no file of
# `theirs` has its name: an #include of theirs cannot have meant it (the sabotage a
# grader's copy adds as a header of its own). A source only one side has always differs.
function(course_first_difference out mine theirs exclude new_names_ok)
  set(globs ${ARGN})
  list(TRANSFORM globs PREPEND ${mine}/ OUTPUT_VARIABLE mine_globs)
  list(TRANSFORM globs PREPEND ${theirs}/ OUTPUT_VARIABLE their_globs)
  file(GLOB_RECURSE mine_files RELATIVE ${mine} ${mine_globs})
  file(GLOB_RECURSE their_files RELATIVE ${theirs} ${their_globs})
  if(exclude)
    list(FILTER mine_files EXCLUDE REGEX "${exclude}")
    list(FILTER their_files EXCLUDE REGEX "${exclude}")
  endif()
  if(NOT CMAKE_SCRIPT_MODE_FILE)
    # A later change to any of these files configures the build again, which compares again:
    # a verdict taken once must not outlive the files it was taken on.
    list(TRANSFORM mine_files PREPEND ${mine}/ OUTPUT_VARIABLE mine_paths)
    list(TRANSFORM their_files PREPEND ${theirs}/ OUTPUT_VARIABLE their_paths)
    set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 ${mine_paths} ${their_paths})
  endif()
  foreach(f IN LISTS their_files)
    if(NOT f IN_LIST mine_files)
      set(${out} "${f} is in ${theirs} and not in ${mine}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(their_names ${their_files})
  list(TRANSFORM their_names REPLACE "^.*/" "")
  foreach(f IN LISTS mine_files)
    get_filename_component(name ${f} NAME)
    if(new_names_ok AND name MATCHES "\\.h$" AND NOT f IN_LIST their_files
       AND NOT name IN_LIST their_names)
      continue()
    endif()
    if(NOT f IN_LIST their_files)
      set(${out} "${f} is in ${mine} and not in ${theirs}" PARENT_SCOPE)
      return()
    endif()
    file(SHA256 ${mine}/${f} a)
    file(SHA256 ${theirs}/${f} b)
    if(NOT a STREQUAL b)
      set(${out} "${f} differs between ${mine} and ${theirs}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# Stops the configure unless the files of `mine`/common are those of `theirs`/common: the
# same names (of the sources, headers and CMakeLists.txt) and the same bytes.
function(course_check_same_common mine theirs)
  course_first_difference(diff ${mine} ${theirs} "" OFF common/*.h common/*.cpp common/*.cu
                          common/CMakeLists.txt)
  if(diff)
    message(FATAL_ERROR "${diff}: the prebuilt course_common (COURSE_PREBUILT_COMMON) was "
                        "compiled from other sources: configure without COURSE_PREBUILT_COMMON "
                        "to compile common/ here, or export this copy again from ${theirs}")
  endif()
endfunction()

# The first difference (course_first_difference) between what two trees' test objects were
# compiled from: every file of tests/ but the grader's and the scripts', every header of
# lessons/ and common/, a header only `mine` has allowed while its name is new to `theirs`.
function(course_tests_difference out mine theirs)
  course_first_difference(diff ${mine} ${theirs} "^tests/(grader|tools)/" ON tests/*.h
                          tests/*.cpp tests/CMakeLists.txt lessons/*.h common/*.h)
  set(${out} "${diff}" PARENT_SCOPE)
endfunction()

# "<file> is not built" for the first of `files` that does not exist, else "".
function(_course_first_unbuilt out)
  foreach(file IN LISTS ARGN)
    if(NOT EXISTS "${file}")
      set(${out} "${file} is not built" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# The test programs whose objects another build may link (course_add_test,
# cmake/Lessons.cmake: each lesson's test_NN), as a global property that the record of this
# tree's tests lists (course_write_prebuilt_tests_record).
function(course_note_test_objects name)
  set_property(GLOBAL APPEND PROPERTY COURSE_TEST_PROGRAMS ${name})
endfunction()

# Each lesson's given objects (ex_NN_given, cmake/Lessons.cmake) and the names of their
# files, for the same record.
function(course_note_given_objects target topic names)
  string(SUBSTRING ${topic} 0 2 nn)
  set_property(GLOBAL APPEND PROPERTY COURSE_GIVEN_LESSONS ${nn})
  set_property(GLOBAL PROPERTY COURSE_GIVEN_TARGET_${nn} ${target})
  set_property(GLOBAL PROPERTY COURSE_GIVEN_FILES_${nn} "${names}")
endfunction()

# The reference side, at the end of the top CMakeLists.txt: DIR/tests/course_tests_prebuilt.cmake,
# the harness archive, each test program's objects and each lesson's given objects.
function(course_write_prebuilt_tests_record)
  get_property(programs GLOBAL PROPERTY COURSE_TEST_PROGRAMS)
  get_property(lessons GLOBAL PROPERTY COURSE_GIVEN_LESSONS)
  set(content "# Written by this build tree's configure (cmake/PrebuiltCommon.cmake): the test and
# given objects that a build with COURSE_PREBUILT_COMMON=${CMAKE_BINARY_DIR} links when its
# files are these.
set(COURSE_PREBUILT_HARNESS \"$<TARGET_FILE:course_harness>\")
set(COURSE_PREBUILT_TEST_PROGRAMS ${programs})
set(COURSE_PREBUILT_GIVEN_LESSONS ${lessons})
")
  foreach(name IN LISTS programs)
    string(APPEND content "set(COURSE_PREBUILT_OBJECTS_${name} \"$<TARGET_OBJECTS:${name}_objects>\")\n")
  endforeach()
  foreach(nn IN LISTS lessons)
    get_property(target GLOBAL PROPERTY COURSE_GIVEN_TARGET_${nn})
    get_property(names GLOBAL PROPERTY COURSE_GIVEN_FILES_${nn})
    string(APPEND content "set(COURSE_PREBUILT_GIVEN_FILES_${nn} \"${names}\")\n"
                          "set(COURSE_PREBUILT_GIVEN_OBJECTS_${nn} \"$<TARGET_OBJECTS:${target}>\")\n")
  endforeach()
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/tests/course_tests_prebuilt.cmake CONTENT "${content}")
endfunction()

# The copy's side, for lesson `nn` (lessons/`topic`): sets `out` to an imported object
# library of the recorded tree's ex_NN_given objects, when the copy links that tree's tests
# (COURSE_PREBUILT_TESTS: the headers are the same) and every given file is byte for byte
# that tree's, and every object is built; else to "" (the lesson compiles every file),
# saying why. The files compared are configure dependencies: a given file changed later
# (a planted mistake) configures again, and compiles the lesson.
function(course_prebuilt_given out nn topic)
  set(${out} "" PARENT_SCOPE)
  if(NOT COURSE_PREBUILT_TESTS OR NOT nn IN_LIST COURSE_PREBUILT_GIVEN_LESSONS)
    return()
  endif()
  set(given ${COURSE_PREBUILT_GIVEN_FILES_${nn}})
  list(TRANSFORM given PREPEND lessons/${topic}/)
  course_first_difference(why ${CMAKE_SOURCE_DIR} ${COURSE_PREBUILT_SOURCE_DIR} "" OFF ${given})
  if(NOT why)
    _course_first_unbuilt(why ${COURSE_PREBUILT_GIVEN_OBJECTS_${nn}})
  endif()
  if(why)
    message(STATUS "course: lesson ${nn}'s given files compiled here: ${why}")
    return()
  endif()
  add_library(ex_${nn}_given OBJECT IMPORTED)
  set_target_properties(ex_${nn}_given PROPERTIES IMPORTED_OBJECTS
                        "${COURSE_PREBUILT_GIVEN_OBJECTS_${nn}}")
  set(${out} ex_${nn}_given PARENT_SCOPE)
endfunction()

# The copy's side: sets COURSE_PREBUILT_TESTS to the test programs whose objects come from
# DIR, and COURSE_PREBUILT_HARNESS to DIR's harness archive, when DIR's record is there, the
# files the tests compile from are the same and every object is built; else leaves
# COURSE_PREBUILT_TESTS empty, saying why (the copy then compiles its tests).
macro(course_read_prebuilt_tests dir)
  set(COURSE_PREBUILT_TESTS "")
  set(_record ${dir}/tests/course_tests_prebuilt.cmake)
  set(_why "")
  if(NOT EXISTS ${_record})
    set(_why "no ${_record}")
  else()
    include(${_record})
    course_tests_difference(_why ${CMAKE_SOURCE_DIR} ${COURSE_PREBUILT_SOURCE_DIR})
    if(NOT _why)
      set(_objects ${COURSE_PREBUILT_HARNESS})
      foreach(_program IN LISTS COURSE_PREBUILT_TEST_PROGRAMS)
        list(APPEND _objects ${COURSE_PREBUILT_OBJECTS_${_program}})
      endforeach()
      _course_first_unbuilt(_why ${_objects})
    endif()
  endif()
  if(_why)
    message(STATUS "course: the tests compiled here, not linked from ${dir}: ${_why}")
  else()
    set(COURSE_PREBUILT_TESTS ${COURSE_PREBUILT_TEST_PROGRAMS})
    message(STATUS "course: the harness and the objects of ${COURSE_PREBUILT_TESTS} from ${dir}")
  endif()
endmacro()
