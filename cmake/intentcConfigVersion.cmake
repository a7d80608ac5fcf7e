# intentcConfigVersion.cmake - the version check of find_package(intentc <version>).
#
# The version is intentc's own (__version__ in intentc/__init__.py), read from the package this
# file belongs to: intentc/_data/cmake/ of an installed package, cmake/ of a source checkout.
# Compatible: the same major version (for 0.x, the same minor one) and no older than requested.

set(PACKAGE_VERSION "unknown")
foreach(_intentc_init "${CMAKE_CURRENT_LIST_DIR}/../../__init__.py" "${CMAKE_CURRENT_LIST_DIR}/../intentc/__init__.py")
  if(EXISTS "${_intentc_init}")
    file(STRINGS "${_intentc_init}" _intentc_line REGEX "^__version__ *= *[\"'][0-9.]+[\"']" LIMIT_COUNT 1)
    if(_intentc_line MATCHES "([0-9]+(\\.[0-9]+)*)")
      set(PACKAGE_VERSION "${CMAKE_MATCH_1}")
      break()
    endif()
  endif()
endforeach()

if(PACKAGE_VERSION STREQUAL "unknown")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
  return()
endif()

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  string(REGEX MATCH "^[0-9]+" _intentc_major "${PACKAGE_VERSION}")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _intentc_minor "${PACKAGE_VERSION}.0")
  if(_intentc_major STREQUAL PACKAGE_FIND_VERSION_MAJOR)
    if(NOT _intentc_major STREQUAL "0"
       OR _intentc_minor STREQUAL "${PACKAGE_FIND_VERSION_MAJOR}.${PACKAGE_FIND_VERSION_MINOR}")
      set(PACKAGE_VERSION_COMPATIBLE TRUE)
    endif()
  endif()
  if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
