# ember_add_extension(<target> <sources>...)
#
# Builds a shared library of ops that ember.ops.load_library() can load: linked to
# Ember::runtime with the runtime's C++ standard, hidden visibility, and an rpath to the
# libember it was built against (the one inside the installed `ember` wheel).
function(ember_add_extension target)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE Ember::runtime)
  target_compile_features(${target} PRIVATE cxx_std_${Ember_CXX_STANDARD})
  get_target_property(_ember_lib Ember::runtime LOCATION)
  get_filename_component(_ember_libdir "${_ember_lib}" DIRECTORY)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    BUILD_RPATH "${_ember_libdir}"
    INSTALL_RPATH "${_ember_libdir}")
  # A statically linked libstdc++ must stay private to the extension (Note [private static
  # runtime] in Ember's native/CMakeLists.txt).
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND NOT APPLE)
    target_link_options(${target} PRIVATE "LINKER:--exclude-libs,ALL")
  endif()
endfunction()
