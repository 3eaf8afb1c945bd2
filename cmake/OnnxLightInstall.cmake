# Installation: the CLI (apps/onnx-light-tune installs itself), the two libraries with their
# headers, a CMake package (find_package(onnx_light) -> onnx_light::runtime, onnx_light::tune),
# a pkg-config file (onnx_light.pc), the man pages of man/ and the shell completions, which the
# build generates from the CLI itself (`onnx-light-tune completion bash|zsh|fish`).
include(CMakePackageConfigHelpers)

set(ONNX_LIGHT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/onnx_light CACHE STRING
  "Where the CMake package files go (relative to the prefix)")
set(ONNX_LIGHT_INSTALL_BASH_COMPLETIONDIR ${CMAKE_INSTALL_DATADIR}/bash-completion/completions CACHE STRING
  "Where the bash completion goes (bash-completion's completions directory)")
set(ONNX_LIGHT_INSTALL_ZSH_COMPLETIONDIR ${CMAKE_INSTALL_DATADIR}/zsh/site-functions CACHE STRING
  "Where the zsh completion function goes (a directory on zsh's fpath)")
set(ONNX_LIGHT_INSTALL_FISH_COMPLETIONDIR ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d CACHE STRING
  "Where the fish completion goes")

# --- libraries and headers -------------------------------------------------------------------
get_target_property(_onnx_light_library_type onnx_light_runtime TYPE)
if(_onnx_light_library_type STREQUAL "SHARED_LIBRARY")
  set(ONNX_LIGHT_SHARED_LIBS ON)
  # The installed CLI finds the installed libraries next to it.
  set_target_properties(onnx-light-tune PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
else()
  set(ONNX_LIGHT_SHARED_LIBS OFF)
endif()

install(TARGETS onnx_light_runtime onnx_light_tune EXPORT onnx_lightTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY libruntime/include/ libtune/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

# --- CMake package -----------------------------------------------------------------------------
install(EXPORT onnx_lightTargets NAMESPACE onnx_light:: DESTINATION ${ONNX_LIGHT_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/onnx_lightConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/onnx_lightConfig.cmake
  INSTALL_DESTINATION ${ONNX_LIGHT_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/onnx_lightConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/onnx_lightConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/onnx_lightConfigVersion.cmake
  DESTINATION ${ONNX_LIGHT_INSTALL_CMAKEDIR})

# --- pkg-config --------------------------------------------------------------------------------
# Public headers include <onnx/onnx_pb.h> (protobuf; ONNX has no .pc file, so its flags are spelt
# out) and <nlohmann/json.hpp>. With static libraries every private dependency must be on the
# plain `pkg-config --libs` line too, since there is no shared object to carry it.
# The file is relocatable: its prefix is found from its own directory (${pcfiledir}), so a tree
# installed with `cmake --install --prefix DIR` or moved elsewhere still works.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(ONNX_LIGHT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(ONNX_LIGHT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _onnx_light_pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" _onnx_light_pc_up "${_onnx_light_pc_up}")
  set(ONNX_LIGHT_PC_PREFIX "\${pcfiledir}/${_onnx_light_pc_up}")
  set(ONNX_LIGHT_PC_LIBDIR "\${exec_prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(ONNX_LIGHT_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(ONNX_LIGHT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(ONNX_LIGHT_PC_REQUIRES "nlohmann_json protobuf")
set(ONNX_LIGHT_PC_PRIVATE_REQUIRES "fmt tomlplusplus libcpuinfo")
if(ONNX_LIGHT_SHARED_LIBS)
  set(ONNX_LIGHT_PC_REQUIRES_PRIVATE "${ONNX_LIGHT_PC_PRIVATE_REQUIRES}")
else()
  string(APPEND ONNX_LIGHT_PC_REQUIRES " ${ONNX_LIGHT_PC_PRIVATE_REQUIRES}")
  set(ONNX_LIGHT_PC_REQUIRES_PRIVATE "")
endif()
configure_file(cmake/onnx_light.pc.in ${CMAKE_CURRENT_BINARY_DIR}/onnx_light.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/onnx_light.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# --- man pages (hand-written roff in man/, installed as they are) ------------------------------
file(GLOB ONNX_LIGHT_MAN_PAGES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/man/*.1)
install(FILES ${ONNX_LIGHT_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# --- shell completions, generated from the CLI by the build ------------------------------------
set(ONNX_LIGHT_COMPLETIONS_DIR ${PROJECT_BINARY_DIR}/completions)
set(ONNX_LIGHT_COMPLETION_FILES
  ${ONNX_LIGHT_COMPLETIONS_DIR}/onnx-light-tune.bash
  ${ONNX_LIGHT_COMPLETIONS_DIR}/_onnx-light-tune
  ${ONNX_LIGHT_COMPLETIONS_DIR}/onnx-light-tune.fish)
if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "onnx_light: cross-compiling without an emulator; shell completions are not generated")
else()
  add_custom_command(OUTPUT ${ONNX_LIGHT_COMPLETION_FILES}
    COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:onnx-light-tune> "-DEMULATOR=${CMAKE_CROSSCOMPILING_EMULATOR}"
            -DOUTPUT_DIR=${ONNX_LIGHT_COMPLETIONS_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/OnnxLightCompletions.cmake
    DEPENDS onnx-light-tune ${CMAKE_CURRENT_SOURCE_DIR}/cmake/OnnxLightCompletions.cmake
    COMMENT "Generating bash, zsh and fish completions from onnx-light-tune"
    VERBATIM)
  add_custom_target(onnx_light_completions ALL DEPENDS ${ONNX_LIGHT_COMPLETION_FILES})
  install(FILES ${ONNX_LIGHT_COMPLETIONS_DIR}/onnx-light-tune.bash
    DESTINATION ${ONNX_LIGHT_INSTALL_BASH_COMPLETIONDIR} RENAME onnx-light-tune)
  install(FILES ${ONNX_LIGHT_COMPLETIONS_DIR}/_onnx-light-tune DESTINATION ${ONNX_LIGHT_INSTALL_ZSH_COMPLETIONDIR})
  install(FILES ${ONNX_LIGHT_COMPLETIONS_DIR}/onnx-light-tune.fish DESTINATION ${ONNX_LIGHT_INSTALL_FISH_COMPLETIONDIR})
endif()
