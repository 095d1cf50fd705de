# Apple's Metal driver (macOS; included from the top CMakeLists when EYAS_METAL is on).
# Builds eyas.metallib from metal/*.metal (one .air per file, then one metallib) and adds the
# Objective-C++ driver (csrc/metal/driver_apple.mm) to eyas_core. The portable Metal backend
# (planners, encoder, emulator driver) is built on every platform; on Linux the tests run the same
# .metal sources in the MSL emulator (docs/metal.md).
find_program(EYAS_XCRUN xcrun)
if(NOT EYAS_XCRUN)
  message(FATAL_ERROR "EYAS_METAL needs Xcode's xcrun (or configure with -DEYAS_METAL=OFF)")
endif()
execute_process(COMMAND ${EYAS_XCRUN} -sdk macosx metal --version RESULT_VARIABLE EYAS_METAL_RC OUTPUT_QUIET ERROR_QUIET)
if(NOT EYAS_METAL_RC EQUAL 0)
  message(FATAL_ERROR "The Metal compiler is missing: Xcode 26 installs it separately "
                      "(xcodebuild -downloadComponent MetalToolchain), or configure with -DEYAS_METAL=OFF")
endif()
enable_language(OBJCXX)

file(GLOB EYAS_METAL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/metal/*.metal)
file(GLOB_RECURSE EYAS_METAL_HEADERS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/metal/*.h)
# -fno-fast-math: Metal defaults to fast math, which breaks the parity tolerances and the
# bit-exact CPU agreement; -ffp-contract=off keeps a*b+c unfused, as the CPU kernels do.
set(EYAS_METAL_FLAGS -x metal -std=metal3.0 -Wall -Wextra -fno-fast-math -ffp-contract=off
    -I${CMAKE_CURRENT_SOURCE_DIR}/metal)
option(EYAS_METAL_DEBUG "Metal kernels with line tables and sources, for GPU debugging" OFF)
if(EYAS_METAL_DEBUG)
  list(APPEND EYAS_METAL_FLAGS -gline-tables-only -frecord-sources)
endif()

set(EYAS_AIR_FILES)
foreach(src ${EYAS_METAL_SOURCES})
  get_filename_component(stem ${src} NAME_WE)
  set(air ${CMAKE_CURRENT_BINARY_DIR}/metal/${stem}.air)
  add_custom_command(OUTPUT ${air}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/metal
                     COMMAND ${EYAS_XCRUN} -sdk macosx metal ${EYAS_METAL_FLAGS} -c ${src} -o ${air}
                     DEPENDS ${src} ${EYAS_METAL_HEADERS}
                     COMMENT "metal ${stem}.metal")
  list(APPEND EYAS_AIR_FILES ${air})
endforeach()
set(EYAS_METALLIB ${CMAKE_CURRENT_BINARY_DIR}/eyas.metallib)
add_custom_command(OUTPUT ${EYAS_METALLIB}
                   COMMAND ${EYAS_XCRUN} -sdk macosx metallib ${EYAS_AIR_FILES} -o ${EYAS_METALLIB}
                   DEPENDS ${EYAS_AIR_FILES}
                   COMMENT "metallib eyas.metallib")
add_custom_target(eyas_metallib ALL DEPENDS ${EYAS_METALLIB})

# The driver: manual retain/release Objective-C++.
target_sources(eyas_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/csrc/metal/driver_apple.mm)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/csrc/metal/driver_apple.mm PROPERTIES COMPILE_OPTIONS -fno-objc-arc)
target_compile_definitions(eyas_core PUBLIC EYAS_HAS_METAL=1)
target_link_libraries(eyas_core PUBLIC "-framework Metal" "-framework Foundation")
add_dependencies(eyas_core eyas_metallib)
# Installed next to _core; the driver finds it relative to the module file (EYAS_METALLIB overrides).
install(FILES ${EYAS_METALLIB} DESTINATION eyas)
