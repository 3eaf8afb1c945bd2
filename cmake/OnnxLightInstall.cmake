include(CMakePackageConfigHelpers)
install(TARGETS onnx_light_runtime onnx_light_tune EXPORT onnx_lightTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY libruntime/include/ libtune/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT onnx_lightTargets NAMESPACE onnx_light:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/onnx_light)
configure_package_config_file(cmake/onnx_lightConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/onnx_lightConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/onnx_light)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/onnx_lightConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/onnx_lightConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/onnx_lightConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/onnx_light)
