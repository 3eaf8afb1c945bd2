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
