# Warnings for our own targets only (never for system headers).
function(onnx_light_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  # -Wshadow=local is GCC's; clang's nearest is -Wshadow-uncaptured-local.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wshadow=local)
  elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wshadow-uncaptured-local)
  endif()
  if(ONNX_LIGHT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
    # GCC 12's flow-sensitive warnings give known false positives at -O2/-O3 (libstdc++ optional,
    # vector and string internals); keep them visible but not fatal.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-error=maybe-uninitialized -Wno-error=stringop-overflow
                                               -Wno-error=array-bounds -Wno-error=restrict)
    endif()
  endif()
endfunction()
