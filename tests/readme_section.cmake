# readme_section(<out> <heading>): the text of README.md from the line
# "## <heading>" on (SOURCE_DIR must be set); a clear error when the README
# has no such section. Shared by the tests that run what the README shows.
function(readme_section out heading)
  file(READ "${SOURCE_DIR}/README.md" readme)
  string(FIND "${readme}" "## ${heading}" at)
  if(at LESS 0)
    message(FATAL_ERROR "README.md has no \"## ${heading}\" section")
  endif()
  string(SUBSTRING "${readme}" ${at} -1 section)
  set(${out} "${section}" PARENT_SCOPE)
endfunction()
