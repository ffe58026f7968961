# How a lesson is built. For every lessons/NN_topic directory, in numeric order:
#
#   ex_NN_given  object library: the given lessons/NN_topic/*.cpp that have no answer
#                (not main.cpp), compiled once for the three libraries below
#   ex_NN_ref    static library: the reference exercise, solutions/NN_topic/*.cpp (the
#                answer files), plus the given objects
#   ex_NN_mine   static library: the learner's exercise, the answer files' namesakes in
#                lessons/NN_topic, plus the given objects (in a learner's copy, which has
#                no solutions/ to name the answer files: lessons/NN_topic/*.cpp but main.cpp)
#   chain_NN     what a driver or test of lesson NN links: lesson NN from IMPL, lessons
#                before it from the reference (CHAIN=ref) or from lessons/ (CHAIN=mine)
#   lessonNN     the driver, lessons/NN_topic/main.cpp (compiled once, as the object
#                library lessonNN_main), copied to the repo root by `make`
#   ex_NN_stubs  static library: lesson NN on its untouched stubs, generated from solutions/
#                into BUILD/stub-tree/lessons/NN_topic by tools/make_stubs.py --out, with
#                the given files of lessons/NN_topic: what lessons/ held before anyone
#                wrote an answer, whatever it holds now (a learner's copy, without
#                solutions/, has only lessons/: there it is ex_NN_mine)
#   lessonNN_stubs  the same driver on lesson NN's stubs (for the stub check of `make test`)
#   test_NN      GoogleTest executable from tests/NN_topic/*.cpp, tests labelled lessonNN
#   test_NN_stubs  the same test objects on lesson NN's stubs (not registered with CTest;
#                the grader's self-test grades it)
#
# solutions/NN_topic holds only the files with answers; headers and given code live once,
# in lessons/NN_topic, which is on the include path of every later lesson, so a lesson may
# include an earlier lesson's header by file name.
#
# A learner's copy (tools/export_learner.sh) has no solutions/: the lessons are the
# lessons/NN_topic directories and ex_NN_ref is the prebuilt reference/lib/libex_NN_ref.a.
# Instructors' hidden tests, COURSE_HIDDEN_TESTS=DIR (cache variable or environment) with
# DIR/NN_topic/*.cpp, become test_NN_hidden, labelled lessonNN_hidden (docs/instructors.md).
include(GoogleTest)

set(COURSE_HIDDEN_TESTS "" CACHE PATH "Hidden tests: DIR/NN_topic/*.cpp (or env COURSE_HIDDEN_TESTS)")
set(_course_hidden_dir "${COURSE_HIDDEN_TESTS}")
if(NOT _course_hidden_dir AND DEFINED ENV{COURSE_HIDDEN_TESTS})
  set(_course_hidden_dir "$ENV{COURSE_HIDDEN_TESTS}")
endif()
if(IS_DIRECTORY ${CMAKE_SOURCE_DIR}/solutions)
  set(_course_have_solutions ON)
else()
  set(_course_have_solutions OFF)  # a learner's copy: reference code only as reference/lib
endif()

set(COURSE_TEST_TIMEOUT 120 CACHE STRING "Seconds each CTest test may run")

# Adds a GoogleTest executable and registers each of its tests with CTest.
#   course_add_test(NAME <target> LABEL <label> SOURCES ... LIBS ... [STUB_LIBS ...])
# The test files compile once, as the object library <target>_objects. With STUB_LIBS
# the same objects are linked a second time, against the lesson's untouched stubs, into
# <target>_stubs: not registered with CTest; the grader's self-test grades it (`grade.py
# --impl stubs`) to show that every test worth points stops at a TODO of its own lesson.
# It is built with the rest of the tree, so that its link shares the cores with other
# files compiling instead of waiting for the grader, which builds one lesson at a time.
#
# Where the harness comes from another build tree (COURSE_PREBUILT_TESTS,
# cmake/PrebuiltCommon.cmake), the objects of the programs that tree recorded are its own,
# linked as they are; any other test program (an instructor's hidden tests) compiles here,
# without the precompiled header, which that tree's harness made. A tree that compiles its
# own harness records its lessons' test programs (test_NN, tests/NN_topic) for such builds.
function(course_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL" "SOURCES;LIBS;STUB_LIBS" ${ARGN})
  if(T_NAME IN_LIST COURSE_PREBUILT_TESTS)
    add_library(${T_NAME}_objects OBJECT IMPORTED)
    set_target_properties(${T_NAME}_objects PROPERTIES
                          IMPORTED_OBJECTS "${COURSE_PREBUILT_OBJECTS_${T_NAME}}")
  else()
    add_library(${T_NAME}_objects OBJECT ${T_SOURCES})
    target_compile_options(${T_NAME}_objects PRIVATE ${COURSE_TEST_CXX_FLAGS})
    target_link_libraries(${T_NAME}_objects PRIVATE ${T_LIBS} course_harness GTest::gtest)
    if(COURSE_PCH AND NOT COURSE_PREBUILT_TESTS)
      target_precompile_headers(${T_NAME}_objects REUSE_FROM course_harness)
    endif()
    if(NOT COURSE_PREBUILT_COMMON AND T_NAME MATCHES "^test_[0-9][0-9]$")
      course_note_test_objects(${T_NAME})  # a lesson's own tests, tests/NN_topic
    endif()
  endif()
  add_executable(${T_NAME} $<TARGET_OBJECTS:${T_NAME}_objects>)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} course_harness GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${T_NAME}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${T_LABEL} TIMEOUT ${COURSE_TEST_TIMEOUT}
    TEST_PREFIX "${T_LABEL}.")
  if(T_STUB_LIBS)
    add_executable(${T_NAME}_stubs $<TARGET_OBJECTS:${T_NAME}_objects>)
    target_link_libraries(${T_NAME}_stubs PRIVATE ${T_STUB_LIBS} course_harness GTest::gtest
                          GTest::gtest_main)
  endif()
endfunction()

# A lesson's library code compiles with common's flags, so it reuses course_common's
# precompiled standard headers (COURSE_PCH; CUDA files go without), or course_pch's where
# course_common is prebuilt (common/CMakeLists.txt).
function(_course_reuse_pch target)
  if(COURSE_PCH)
    if(TARGET course_pch)
      target_precompile_headers(${target} REUSE_FROM course_pch)
    else()
      target_precompile_headers(${target} REUSE_FROM course_common)
    endif()
    get_target_property(srcs ${target} SOURCES)
    list(FILTER srcs INCLUDE REGEX "\\.cu$")
    if(srcs)
      set_source_files_properties(${srcs} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endif()
endfunction()

# ex_NN_given (OBJECT): lesson NN's given files, the lessons/NN_topic/*.cpp that are
# neither main.cpp nor an answer file (one of solutions/NN_topic). They are compiled once and
# archived into each library of the lesson (ex_NN_ref, ex_NN_mine, ex_NN_stubs), which
# differ only in where the answer files come from. Sets `${target}_SOURCES_FOUND` in the
# caller. A learner's copy has no solutions/ to tell answers from given files: there
# ex_NN_mine compiles the whole folder and there is no ex_NN_given. With COURSE_UNITY, in
# unity batches (the top CMakeLists.txt).
function(_course_given_objects target topic include_dirs)
  set(dir ${CMAKE_SOURCE_DIR}/lessons/${topic})
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.cpp ${dir}/*.cu)
  list(FILTER srcs EXCLUDE REGEX "/main\\.cpp$")
  file(GLOB answers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/solutions/${topic}/*.cpp
       ${CMAKE_SOURCE_DIR}/solutions/${topic}/*.cu)
  foreach(answer IN LISTS answers)
    get_filename_component(name ${answer} NAME)
    list(REMOVE_ITEM srcs ${dir}/${name})
  endforeach()
  if(srcs)
    add_library(${target} OBJECT ${srcs})
    target_include_directories(${target} PUBLIC ${dir} PRIVATE ${include_dirs})
    target_link_libraries(${target} PUBLIC course_common)
    _course_reuse_pch(${target})
    if(COURSE_UNITY)
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    endif()
    set(${target}_SOURCES_FOUND ON PARENT_SCOPE)
    if(NOT COURSE_PREBUILT_COMMON)  # for a learner's copy that links these objects
      list(TRANSFORM srcs REPLACE "^.*/" "")
      course_note_given_objects(${target} ${topic} "${srcs}")
    endif()
  else()
    set(${target}_SOURCES_FOUND OFF PARENT_SCOPE)
  endif()
endfunction()

# A lesson's library from its answer files `answers` and the objects of `given` (a target
# made by _course_given_objects, or empty); with neither, an interface library that only
# carries the lesson's include directory.
function(_course_lesson_library target dir answers given include_dirs)
  set(srcs ${answers})
  if(given)
    list(APPEND srcs $<TARGET_OBJECTS:${given}>)
  endif()
  if(srcs)
    add_library(${target} STATIC ${srcs})
    target_include_directories(${target} PUBLIC ${dir} PRIVATE ${include_dirs})
    target_link_libraries(${target} PUBLIC course_common)
    _course_reuse_pch(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${dir})
    target_link_libraries(${target} INTERFACE course_common)
  endif()
endfunction()

# The answer files of lesson `topic`: solutions/NN_topic/*.cpp (`tree` = solutions), or
# their namesakes in lessons/NN_topic (`tree` = lessons: the learner's answers).
function(_course_answer_files out topic tree)
  file(GLOB answers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/solutions/${topic}/*.cpp
       ${CMAKE_SOURCE_DIR}/solutions/${topic}/*.cu)
  set(files "")
  foreach(answer IN LISTS answers)
    get_filename_component(name ${answer} NAME)
    list(APPEND files ${CMAKE_SOURCE_DIR}/${tree}/${topic}/${name})
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# ex_NN_mine in a learner's copy: every lessons/NN_topic/*.cpp but main.cpp. Where the
# copy links another tree's objects (COURSE_PREBUILT_TESTS, cmake/PrebuiltCommon.cmake),
# the lesson's given files that are that tree's, byte for byte, are linked as its
# ex_NN_given objects; only the others (the answers) compile here.
function(_course_whole_folder_library target dir include_dirs)
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.cpp ${dir}/*.cu)
  list(FILTER srcs EXCLUDE REGEX "/main\\.cpp$")
  get_filename_component(topic ${dir} NAME)
  string(SUBSTRING ${topic} 0 2 nn)
  course_prebuilt_given(given ${nn} ${topic})
  if(given)
    foreach(name IN LISTS COURSE_PREBUILT_GIVEN_FILES_${nn})
      list(REMOVE_ITEM srcs ${dir}/${name})
    endforeach()
  endif()
  _course_lesson_library(${target} ${dir} "${srcs}" "${given}" "${include_dirs}")
endfunction()

# ex_NN_stubs (see the top): the answer files' stubs, generated at build time, with the
# lesson's given objects.
function(_course_stub_library target topic given include_dirs)
  set(dir ${CMAKE_SOURCE_DIR}/lessons/${topic})
  set(stub_root ${CMAKE_BINARY_DIR}/stub-tree)
  file(GLOB answers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/solutions/${topic}/*.cpp
       ${CMAKE_SOURCE_DIR}/solutions/${topic}/*.cu)
  set(stubs "")
  foreach(answer IN LISTS answers)
    get_filename_component(name ${answer} NAME)
    list(APPEND stubs ${stub_root}/lessons/${topic}/${name})
  endforeach()
  if(stubs)
    add_custom_command(
      OUTPUT ${stubs}
      COMMAND ${COURSE_PYTHON} ${CMAKE_SOURCE_DIR}/tools/make_stubs.py --quiet --out ${stub_root}
              --lesson ${topic}
      COMMAND ${CMAKE_COMMAND} -E touch ${stubs}
      DEPENDS ${answers} ${CMAKE_SOURCE_DIR}/tools/make_stubs.py
      COMMENT "stubs of lesson ${topic}"
      VERBATIM)
  endif()
  _course_lesson_library(${target} ${dir} "${stubs}" "${given}" "${include_dirs}")
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE)
  endif()
endfunction()

# ex_NN_ref in a learner's copy: the prebuilt archive, or headers only when it has none.
function(_course_prebuilt_reference target dir)
  set(lib ${CMAKE_SOURCE_DIR}/reference/lib/lib${target}.a)
  if(EXISTS ${lib})
    add_library(${target} STATIC IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${lib})
    target_include_directories(${target} INTERFACE ${dir})
    target_link_libraries(${target} INTERFACE course_common)
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${dir})
    target_link_libraries(${target} INTERFACE course_common)
  endif()
endfunction()

find_program(COURSE_PYTHON NAMES python3 python REQUIRED)

macro(course_add_all_lessons)
  file(GLOB _course_lesson_dirs LIST_DIRECTORIES true RELATIVE ${CMAKE_SOURCE_DIR}/lessons
       ${CMAKE_SOURCE_DIR}/lessons/[0-9][0-9]_*)
  list(SORT _course_lesson_dirs)
  set(COURSE_LESSONS "")
  set(_course_earlier_includes "")
  set(_course_earlier_ref "")
  set(_course_earlier_mine "")
  foreach(_topic IN LISTS _course_lesson_dirs)
    if(NOT IS_DIRECTORY ${CMAKE_SOURCE_DIR}/lessons/${_topic})
      continue()
    endif()
    string(SUBSTRING ${_topic} 0 2 _nn)
    list(APPEND COURSE_LESSONS ${_nn})
    set(_dir ${CMAKE_SOURCE_DIR}/lessons/${_topic})
    if(_course_have_solutions)
      _course_given_objects(ex_${_nn}_given ${_topic} "${_course_earlier_includes}")
      set(_given "")
      if(ex_${_nn}_given_SOURCES_FOUND)
        set(_given ex_${_nn}_given)
      endif()
      _course_answer_files(_answers ${_topic} solutions)
      _course_lesson_library(ex_${_nn}_ref ${_dir} "${_answers}" "${_given}"
                             "${_course_earlier_includes}")
      _course_answer_files(_answers ${_topic} lessons)
      _course_lesson_library(ex_${_nn}_mine ${_dir} "${_answers}" "${_given}"
                             "${_course_earlier_includes}")
    else()
      _course_prebuilt_reference(ex_${_nn}_ref ${_dir})
      _course_whole_folder_library(ex_${_nn}_mine ${_dir} "${_course_earlier_includes}")
    endif()
    set(_sel ex_${_nn}_ref)
    # The reference build does not compile lessons/ answers in progress unless asked to.
    get_target_property(_type ex_${_nn}_mine TYPE)
    if(IMPL STREQUAL "solutions" AND _type STREQUAL "STATIC_LIBRARY")
      set_target_properties(ex_${_nn}_mine PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endif()
    if(_course_have_solutions)
      _course_stub_library(ex_${_nn}_stubs ${_topic} "${_given}" "${_course_earlier_includes}")
    else()
      add_library(ex_${_nn}_stubs ALIAS ex_${_nn}_mine)
    endif()
    if(IMPL STREQUAL "lessons")
      set(_sel ex_${_nn}_mine)
    endif()
    # Static libraries resolve left to right: the newest lesson first.
    add_library(chain_${_nn} INTERFACE)
    if(CHAIN STREQUAL "mine")
      target_link_libraries(chain_${_nn} INTERFACE ${_sel} ${_course_earlier_mine})
    else()
      target_link_libraries(chain_${_nn} INTERFACE ${_sel} ${_course_earlier_ref})
    endif()
    target_include_directories(chain_${_nn} INTERFACE ${_course_earlier_includes})

    if(EXISTS ${_dir}/main.cpp)
      # The driver's main.cpp, compiled once for lessonNN and lessonNN_stubs.
      add_library(lesson${_nn}_main OBJECT ${_dir}/main.cpp)
      target_include_directories(lesson${_nn}_main PRIVATE ${_dir} ${_course_earlier_includes})
      target_link_libraries(lesson${_nn}_main PRIVATE course_common)
      target_compile_options(lesson${_nn}_main PRIVATE ${COURSE_DRIVER_CXX_FLAGS})
      add_executable(lesson${_nn} $<TARGET_OBJECTS:lesson${_nn}_main>)
      target_link_libraries(lesson${_nn} PRIVATE chain_${_nn})
      # The stub check of `make test`: the driver on lesson NN's stubs, whatever IMPL is.
      if(TARGET ex_${_nn}_stubs)
        add_executable(lesson${_nn}_stubs $<TARGET_OBJECTS:lesson${_nn}_main>)
        target_link_libraries(lesson${_nn}_stubs PRIVATE ex_${_nn}_stubs ${_course_earlier_ref})
      endif()
    endif()
    if(EXISTS ${CMAKE_SOURCE_DIR}/tests/${_topic})
      file(GLOB _tsrcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/${_topic}/*.cpp)
      if(_tsrcs)
        set(_stub_libs "")
        if(_course_have_solutions)  # test_NN_stubs: lesson NN's stubs, the reference before it
          set(_stub_libs ex_${_nn}_stubs ${_course_earlier_ref})
        endif()
        course_add_test(NAME test_${_nn} LABEL lesson${_nn} SOURCES ${_tsrcs} LIBS chain_${_nn}
                        STUB_LIBS ${_stub_libs})
      endif()
    endif()
    if(_course_hidden_dir)
      file(GLOB _hsrcs CONFIGURE_DEPENDS ${_course_hidden_dir}/${_topic}/*.cpp)
      if(_hsrcs)
        course_add_test(NAME test_${_nn}_hidden LABEL lesson${_nn}_hidden SOURCES ${_hsrcs}
                        LIBS chain_${_nn})
      endif()
    endif()

    list(PREPEND _course_earlier_ref ex_${_nn}_ref)
    if(TARGET ex_${_nn}_mine)
      list(PREPEND _course_earlier_mine ex_${_nn}_mine)
    else()
      list(PREPEND _course_earlier_mine ex_${_nn}_ref)
    endif()
    list(APPEND _course_earlier_includes ${CMAKE_SOURCE_DIR}/lessons/${_topic})
  endforeach()
endmacro()
