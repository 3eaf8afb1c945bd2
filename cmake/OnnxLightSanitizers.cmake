# ONNX_LIGHT_SANITIZE is a list such as "address;undefined" or "thread"; applied globally so that
# every target (libraries, tests, tools) is instrumented consistently.
if(ONNX_LIGHT_SANITIZE)
  list(JOIN ONNX_LIGHT_SANITIZE "," _onnx_light_san)
  if("thread" IN_LIST ONNX_LIGHT_SANITIZE AND "address" IN_LIST ONNX_LIGHT_SANITIZE)
    message(FATAL_ERROR "ONNX_LIGHT_SANITIZE: thread and address cannot be combined")
  endif()
  add_compile_options(-fsanitize=${_onnx_light_san} -fno-omit-frame-pointer -fno-sanitize-recover=all -g)
  add_link_options(-fsanitize=${_onnx_light_san})
  message(STATUS "onnx_light: sanitizers ${_onnx_light_san}")
endif()

# Unit test files that run longest under the sanitizers (CI's logs): ctest starts them first (a
# COST), so that its two workers finish together instead of one waiting on a long file started
# last (a fresh tree has no timing history to order by).
set(ONNX_LIGHT_LONG_UNIT_TESTS quantized_conv_vnni cache_transfer resize conv_transpose fused_conv resize_simd
    cache_merge_property kernels denormals)
