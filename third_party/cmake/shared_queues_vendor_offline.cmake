# SPDX-License-Identifier: Apache-2.0
# Project file (not upstream): loaded through CMAKE_PROJECT_shared_queues_vendor_INCLUDE right after
# rosbag2's unmodified shared_queues_vendor calls project(). That package downloads
# cameron314/readerwriterqueue at commit ef7dfbf5 with ExternalProject_Add; with no internet at build
# time this puts the same two headers, from third_party/readerwriterqueue-ef7dfbf.tar.gz (the same
# commit), where the download would have put them. ExternalProject.cmake has include_guard(GLOBAL),
# so the package's own include(ExternalProject) leaves this definition in place.
include(ExternalProject)
if(NOT READERWRITERQUEUE_SOURCE_DIR)
  message(FATAL_ERROR "shared_queues_vendor_offline.cmake: set READERWRITERQUEUE_SOURCE_DIR")
endif()
function(ExternalProject_Add name)
  file(COPY
    "${READERWRITERQUEUE_SOURCE_DIR}/atomicops.h"
    "${READERWRITERQUEUE_SOURCE_DIR}/readerwriterqueue.h"
    DESTINATION "${CMAKE_CURRENT_BINARY_DIR}/singleproducerconsumer/src/${name}")
  message(STATUS "${name}: readerwriterqueue headers from ${READERWRITERQUEUE_SOURCE_DIR} (offline)")
endfunction()
