# SPDX-License-Identifier: Apache-2.0
# escrow_install.cmake - what `cmake --install` puts under the prefix for
# libescrow (included by this folder's CMakeLists.txt; the daemons are
# installed by the top-level one):
#   lib/libescrow.so.0 (and .so, .so.<version>), lib/libescrow.a
#   include/escrow/escrow.h, escrow_errors.h, escrow_version.h
#   lib/pkgconfig/escrow.pc          pkg-config --cflags --libs escrow
#   lib/cmake/escrow/                find_package(escrow): escrow::escrow
#                                    (shared), escrow::escrow_static
# (lib is CMAKE_INSTALL_LIBDIR, include CMAKE_INSTALL_INCLUDEDIR.)
# The build tree has its own escrow.pc in <build>/lib/pkgconfig, for
# programs built against the library before it is installed.
include(CMakePackageConfigHelpers)

set_target_properties(escrow_static PROPERTIES PUBLIC_HEADER "")
install(TARGETS escrow_shared escrow_static EXPORT escrowTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/escrow)

set(ESC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/escrow)
install(EXPORT escrowTargets NAMESPACE escrow:: DESTINATION ${ESC_CMAKE_DIR})
configure_package_config_file(escrowConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/escrowConfig.cmake
  INSTALL_DESTINATION ${ESC_CMAKE_DIR})
# SameMajorVersion: the SONAME's promise (libescrow.so.0).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/escrowConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/escrowConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/escrowConfigVersion.cmake
        DESTINATION ${ESC_CMAKE_DIR})

# escrow.pc with the prefix given at install time (cmake --install --prefix).
set(ESC_PC_IN ${CMAKE_CURRENT_SOURCE_DIR}/escrow.pc.in)
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(ESC_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(ESC_PC_LIBDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}\")
  set(ESC_PC_INCLUDEDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_INCLUDEDIR}/escrow\")
  set(pc \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/escrow.pc\")
  message(STATUS \"Installing: \${pc}\")
  configure_file(\"${ESC_PC_IN}\" \"\${pc}\" @ONLY)
")
set(ESC_PC_PREFIX ${PROJECT_BINARY_DIR})
set(ESC_PC_LIBDIR ${PROJECT_BINARY_DIR}/lib)
set(ESC_PC_INCLUDEDIR ${ESC_PUBLIC_INCLUDE})
configure_file(${ESC_PC_IN} ${PROJECT_BINARY_DIR}/lib/pkgconfig/escrow.pc @ONLY)
