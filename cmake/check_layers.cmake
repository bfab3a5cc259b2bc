# check_layers.cmake — the layering test. Checks every #include "..." of the
# files of each declared layer (mtf_declare_layer in the CMakeLists) against
# the layer order: a file may include headers of its own layer and of the
# layers it builds on (directly or through others), never of a layer above
# or beside it. Also fails on a file under src/ or a header of include/mtf/
# that no layer claims.
#
#   cmake -DSOURCE_DIR=<project> -DLAYERS=<build>/mtf_layers.cmake
#         [-DEXTRA=layer=path;...] -P check_layers.cmake
# EXTRA adds files (absolute paths) to a layer, for the test that plants an
# up-include and expects this check to fail.
cmake_minimum_required(VERSION 3.18)
include(${LAYERS})

# What each layer may include: itself and everything below it.
foreach(layer IN LISTS MTF_LAYERS)
  set(below_${layer} ${layer})
  foreach(dep IN LISTS MTF_LAYER_${layer}_DEPS)
    list(APPEND below_${layer} ${below_${dep}})
  endforeach()
  list(REMOVE_DUPLICATES below_${layer})
  foreach(h IN LISTS MTF_LAYER_${layer}_HEADERS)
    set(header_layer_${h} ${layer})
  endforeach()
  set(files_${layer} "")
  foreach(dir IN LISTS MTF_LAYER_${layer}_DIRS)
    file(GLOB_RECURSE found ${SOURCE_DIR}/${dir}/*.h ${SOURCE_DIR}/${dir}/*.cc)
    list(APPEND files_${layer} ${found})
    set(dir_layer_${dir} ${layer})
  endforeach()
  foreach(h IN LISTS MTF_LAYER_${layer}_HEADERS)
    list(APPEND files_${layer} ${SOURCE_DIR}/include/mtf/${h})
  endforeach()
endforeach()
foreach(extra IN LISTS EXTRA)
  string(REPLACE "=" ";" pair "${extra}")
  list(GET pair 0 layer)
  list(GET pair 1 path)
  list(APPEND files_${layer} ${path})
endforeach()

set(errors "")
# Every folder of src/ and every public header belongs to a layer.
file(GLOB src_dirs LIST_DIRECTORIES true RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/src/*)
foreach(dir IN LISTS src_dirs)
  if(IS_DIRECTORY ${SOURCE_DIR}/${dir} AND NOT DEFINED dir_layer_${dir})
    string(APPEND errors "  ${dir}/ belongs to no layer: declare it with mtf_layer in src/CMakeLists.txt\n")
  endif()
endforeach()
file(GLOB public RELATIVE ${SOURCE_DIR}/include/mtf ${SOURCE_DIR}/include/mtf/*.h)
foreach(h IN LISTS public)
  if(NOT DEFINED header_layer_${h})
    string(APPEND errors "  include/mtf/${h} belongs to no layer: add it to a layer's PUBLIC_HEADERS in src/CMakeLists.txt\n")
  endif()
endforeach()

set(checked 0)
foreach(layer IN LISTS MTF_LAYERS)
  foreach(file IN LISTS files_${layer})
    math(EXPR checked "${checked} + 1")
    file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
      string(REGEX MATCH "^[^/]+" top "${inc}")
      set(target "")
      if(top STREQUAL "mtf")
        string(REGEX REPLACE "^mtf/" "" h "${inc}")
        if(DEFINED header_layer_${h})
          set(target ${header_layer_${h}})
        endif()
      elseif(DEFINED dir_layer_src/${top})
        set(target ${dir_layer_src/${top}})
      elseif(DEFINED dir_layer_${top})
        set(target ${dir_layer_${top}})
      endif()
      if(target AND NOT target IN_LIST below_${layer})
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
        string(REPLACE ";" ", " allowed "${below_${layer}}")
        string(APPEND errors "  ${rel} (layer ${layer}) includes \"${inc}\" of layer ${target}, "
               "which ${layer} does not build on (it may include: ${allowed}); move the code "
               "it needs down, or this code up\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(errors)
  message(FATAL_ERROR "layering violations:\n${errors}")
endif()
list(LENGTH MTF_LAYERS n)
message(STATUS "layering: ${checked} files of ${n} layers include only their own layer and those below")
