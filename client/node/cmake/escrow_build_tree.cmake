# SPDX-License-Identifier: Apache-2.0
# libescrow from a build tree of this source tree, as the imported target
# PkgConfig::ESCROW (the name pkg_check_modules(ESCROW ... IMPORTED_TARGET
# escrow) gives an installed libescrow, so switching is one line in
# ../CMakeLists.txt).
#
# ESCROW_BUILD_DIR (default: build/ of the source tree this package sits in)
# holds the static PIC archives of target escrow and what it links:
# escrow_proto, escrow_common, escrow_auth_core (frame signatures),
# escrow_base; the headers come from the source tree it was configured from;
# nanomsg, protobuf-c and libsodium from pkg-config. A build tree configured with ESC_SANITIZE=ON
# has ASan/UBSan-instrumented archives: the addon is then instrumented too,
# and node must run with the sanitizer runtime preloaded (see docs/node.md).
if(NOT ESCROW_BUILD_DIR)
  get_filename_component(ESCROW_BUILD_DIR ${CMAKE_CURRENT_LIST_DIR}/../../../build ABSOLUTE)
endif()
get_filename_component(ESCROW_BUILD_DIR ${ESCROW_BUILD_DIR} ABSOLUTE)
if(NOT EXISTS ${ESCROW_BUILD_DIR}/CMakeCache.txt)
  message(FATAL_ERROR "${ESCROW_BUILD_DIR} is not a build tree of escrow: set ESCROW_BUILD_DIR "
                      "to one (cmake -S <escrow> -B <dir> && cmake --build <dir> --target escrow)")
endif()
# The source tree that build tree was configured from: the headers.
file(STRINGS ${ESCROW_BUILD_DIR}/CMakeCache.txt ESCROW_SOURCE_DIR REGEX "^escrow_SOURCE_DIR:STATIC=")
string(REGEX REPLACE "^escrow_SOURCE_DIR:STATIC=" "" ESCROW_SOURCE_DIR "${ESCROW_SOURCE_DIR}")

# Target escrow's archive is libescrow.a, or libescrow_client.a in a tree
# that also builds the installable libescrow.a.
set(_esc_archives)
foreach(a client/libescrow/libescrow proto/libescrow_proto common/libescrow_common
          common/libescrow_auth_core common/libescrow_base)
  if(a STREQUAL "client/libescrow/libescrow" AND EXISTS ${ESCROW_BUILD_DIR}/${a}_client.a)
    set(a ${a}_client)
  endif()
  if(NOT EXISTS ${ESCROW_BUILD_DIR}/${a}.a)
    message(FATAL_ERROR "${ESCROW_BUILD_DIR}/${a}.a is missing: build libescrow first "
                        "(cmake --build ${ESCROW_BUILD_DIR} --target escrow) or set "
                        "ESCROW_BUILD_DIR to the build tree that has it")
  endif()
  list(APPEND _esc_archives ${ESCROW_BUILD_DIR}/${a}.a)
endforeach()
# Headers: the source tree's, and those a build tree generates (if any).
set(_esc_include ${ESCROW_SOURCE_DIR}/client/libescrow/include ${ESCROW_SOURCE_DIR}/common)
if(EXISTS ${ESCROW_BUILD_DIR}/include/escrow)
  list(PREPEND _esc_include ${ESCROW_BUILD_DIR}/include/escrow)
endif()

pkg_check_modules(ESCROW_DEPS REQUIRED nanomsg libprotobuf-c libsodium)
add_library(PkgConfig::ESCROW INTERFACE IMPORTED)
set_target_properties(PkgConfig::ESCROW PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${_esc_include}"
  INTERFACE_LINK_LIBRARIES "${_esc_archives};${ESCROW_DEPS_LINK_LIBRARIES};pthread")

file(STRINGS ${ESCROW_BUILD_DIR}/CMakeCache.txt _esc_sanitize REGEX "^ESC_SANITIZE:BOOL=ON$")
if(_esc_sanitize)
  message(STATUS "libescrow in ${ESCROW_BUILD_DIR} is built with ASan/UBSan: so is the addon")
  set(_esc_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  set_property(TARGET PkgConfig::ESCROW PROPERTY INTERFACE_COMPILE_OPTIONS "${_esc_san}")
  set_property(TARGET PkgConfig::ESCROW PROPERTY INTERFACE_LINK_OPTIONS -fsanitize=address,undefined)
endif()
