# Script mode (cmake -P): writes the bash, zsh and fish completions that TOOL prints for
# `completion <shell>` into OUTPUT_DIR. Run by the build after onnx-light-tune is linked.
#   -DTOOL=<onnx-light-tune> -DOUTPUT_DIR=<dir> [-DEMULATOR=<cross-compiling emulator>]
if(NOT TOOL OR NOT OUTPUT_DIR)
  message(FATAL_ERROR "usage: cmake -DTOOL=<onnx-light-tune> -DOUTPUT_DIR=<dir> -P OnnxLightCompletions.cmake")
endif()
file(MAKE_DIRECTORY "${OUTPUT_DIR}")
foreach(entry "bash;onnx-light-tune.bash" "zsh;_onnx-light-tune" "fish;onnx-light-tune.fish")
  list(GET entry 0 shell)
  list(GET entry 1 name)
  execute_process(COMMAND ${EMULATOR} "${TOOL}" completion ${shell}
    OUTPUT_FILE "${OUTPUT_DIR}/${name}.tmp"
    ERROR_VARIABLE errors
    RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    file(REMOVE "${OUTPUT_DIR}/${name}.tmp")
    message(FATAL_ERROR "${TOOL} completion ${shell} failed (${result}): ${errors}")
  endif()
  file(RENAME "${OUTPUT_DIR}/${name}.tmp" "${OUTPUT_DIR}/${name}")
endforeach()
