# intentcConfig.cmake - the CMake package of intentc, the Intent kernel compiler.
#
#     execute_process(COMMAND intentc --cmake-dir OUTPUT_VARIABLE intentc_DIR
#                     OUTPUT_STRIP_TRAILING_WHITESPACE)      # or -Dintentc_DIR=...
#     find_package(intentc REQUIRED)
#     intentc_add_library(kernels SOURCE kernels.intent)
#     target_link_libraries(app PRIVATE kernels)            # kernels.h is on the include path
#
# intentc_add_library(<name> SOURCE <file.intent>
#                     [STATIC | SHARED | OBJECT]            # default: SHARED if BUILD_SHARED_LIBS, else STATIC
#                     [TARGET <intentc target>]             # default: ${INTENTC_TARGET}
#                     [CPU <cpu>]                           # default: ${INTENTC_CPU}
#                     [OUTPUT_NAME <stem>]                  # default: the source's stem (<stem>.h)
#                     [PREFIX <name>]                       # the kernels' C symbols: <name> + kernel name
#                     [INCLUDE_DIRS <dir>...]               # -I: folders searched for imported modules
#                     [FLAGS <extra intentc build flags>...])
#
# find_package(intentc 0.1) checks the version (intentcConfigVersion.cmake: the same major
# version, and for 0.x the same minor one, no older than requested).
#
# runs `intentc build` as a custom command (with a DEPFILE, so editing the source or
# reinstalling intentc rebuilds it) into ${CMAKE_CURRENT_BINARY_DIR}/intentc/<name>/
# (<stem>.a, lib<stem>.so or <stem>.o) and defines <name> as an imported library whose
# include directory holds <stem>.h and intent_runtime.h. Cache variables: INTENTC_EXECUTABLE (the intentc command, a list
# such as "python3;-m;intentc" works too), INTENTC_TARGET, INTENTC_CPU.

if(CMAKE_VERSION VERSION_LESS 3.20)
  set(intentc_FOUND FALSE)
  set(intentc_NOT_FOUND_MESSAGE "intentc's CMake package needs CMake 3.20 or newer (DEPFILE with every generator)")
  return()
endif()

find_program(INTENTC_EXECUTABLE NAMES intentc DOC "The intentc command (a list such as python3;-m;intentc works too)")
if(NOT INTENTC_EXECUTABLE)
  set(intentc_FOUND FALSE)
  set(intentc_NOT_FOUND_MESSAGE "the intentc command is not on PATH; set INTENTC_EXECUTABLE")
  return()
endif()

execute_process(COMMAND ${INTENTC_EXECUTABLE} --version OUTPUT_VARIABLE _intentc_version_text
                RESULT_VARIABLE _intentc_version_rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _intentc_version_rc EQUAL 0)
  set(intentc_FOUND FALSE)
  set(intentc_NOT_FOUND_MESSAGE "'${INTENTC_EXECUTABLE} --version' failed: ${_intentc_version_rc}")
  return()
endif()
string(REGEX MATCH "[0-9]+(\\.[0-9]+)*" intentc_VERSION "${_intentc_version_text}")
include_guard(GLOBAL)  # after the checks: a failed find_package can be retried

# A cross build (CMAKE_SYSTEM_PROCESSOR from the toolchain file) picks the matching target.
set(_intentc_default_target host)
if(CMAKE_CROSSCOMPILING)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    set(_intentc_default_target aarch64-linux-gnu)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(_intentc_default_target x86_64-linux-gnu)
  endif()
endif()
set(INTENTC_TARGET "${_intentc_default_target}" CACHE STRING "intentc --target for intentc_add_library")
set(INTENTC_CPU "native" CACHE STRING "intentc --cpu for intentc_add_library")

include(CMakeFindDependencyMacro)
find_dependency(Threads)

# Functions run with the policies in effect where they are defined (CMP0116: depfiles
# relative to the current binary directory with Ninja).
cmake_policy(PUSH)
cmake_policy(VERSION 3.20)

function(intentc_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "STATIC;SHARED;OBJECT" "SOURCE;TARGET;CPU;OUTPUT_NAME;PREFIX"
                        "FLAGS;INCLUDE_DIRS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "intentc_add_library(${name}): unexpected arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCE)
    message(FATAL_ERROR "intentc_add_library(${name}): SOURCE <file.intent> is required")
  endif()
  set(kinds)
  foreach(kind STATIC SHARED OBJECT)
    if(arg_${kind})
      list(APPEND kinds ${kind})
    endif()
  endforeach()
  list(LENGTH kinds count)
  if(count GREATER 1)
    message(FATAL_ERROR "intentc_add_library(${name}): give only one of STATIC, SHARED, OBJECT")
  elseif(count EQUAL 1)
    set(kind ${kinds})
  elseif(BUILD_SHARED_LIBS)
    set(kind SHARED)
  else()
    set(kind STATIC)
  endif()
  set(suffix_STATIC .a)
  set(suffix_SHARED .so)
  set(suffix_OBJECT .o)

  get_filename_component(source "${arg_SOURCE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(arg_OUTPUT_NAME)
    set(stem "${arg_OUTPUT_NAME}")
  else()
    get_filename_component(stem "${source}" NAME_WE)
  endif()
  set(target "${INTENTC_TARGET}")
  if(arg_TARGET)
    set(target "${arg_TARGET}")
  endif()
  set(cpu "${INTENTC_CPU}")
  if(arg_CPU)
    set(cpu "${arg_CPU}")
  endif()

  set(prefix_flag)
  if(arg_PREFIX)
    set(prefix_flag --prefix "${arg_PREFIX}")
  endif()

  # Imported modules are found beside the source, then in each INCLUDE_DIRS folder (relative
  # ones are relative to this source folder), in order; the depfile lists each imported file.
  set(include_flags)
  foreach(include_dir IN LISTS arg_INCLUDE_DIRS)
    get_filename_component(include_dir "${include_dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND include_flags -I "${include_dir}")
  endforeach()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/intentc/${name}")
  set(output "${dir}/${stem}${suffix_${kind}}")
  if(kind STREQUAL "SHARED")
    # Executables record the name they were linked by: lib<stem>.so, found with -l<stem> and
    # the rpath CMake adds. The header keeps the stem.
    set(output "${dir}/lib${stem}.so")
  endif()
  file(MAKE_DIRECTORY "${dir}")  # imported targets need their include directory to exist
  # One intentc run writes the library, its depfile and the headers. intentc rewrites a header
  # only when its content changes; as BYPRODUCTS the headers are re-checked after the run
  # (Ninja's restat), so an edit that keeps the kernels' signatures recompiles nothing that
  # includes them. Messages in the library name the source relative to this source folder,
  # so the artifacts do not depend on where the project lies.
  add_custom_command(
    OUTPUT "${output}"
    BYPRODUCTS "${dir}/${stem}.h" "${dir}/intent_runtime.h"
    COMMAND ${INTENTC_EXECUTABLE} build "${source}" -o "${output}" --target "${target}" --cpu "${cpu}"
            --header "${dir}/${stem}.h" --depfile "${output}.d"
            --file-prefix-map "${CMAKE_CURRENT_SOURCE_DIR}/=" ${include_flags} ${prefix_flag} ${arg_FLAGS}
    DEPENDS "${source}"
    DEPFILE "${output}.d"
    COMMENT "intentc: building ${name} (${target}) from ${arg_SOURCE}"
    VERBATIM)
  add_custom_target(${name}_intentc DEPENDS "${output}")

  add_library(${name} ${kind} IMPORTED GLOBAL)
  if(kind STREQUAL "OBJECT")
    set_target_properties(${name} PROPERTIES IMPORTED_OBJECTS "${output}")
  elseif(kind STREQUAL "SHARED")
    set_target_properties(${name} PROPERTIES IMPORTED_LOCATION "${output}" IMPORTED_NO_SONAME TRUE)
  else()
    set_target_properties(${name} PROPERTIES IMPORTED_LOCATION "${output}")
  endif()
  set_target_properties(${name} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dir}")
  if(NOT kind STREQUAL "SHARED")  # the runtime in the archive/object needs threads and libm
    set_target_properties(${name} PROPERTIES INTERFACE_LINK_LIBRARIES "Threads::Threads;m")
  endif()
  add_dependencies(${name} ${name}_intentc)
endfunction()

cmake_policy(POP)
