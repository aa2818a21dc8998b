# Runs the training workload on the instrumented index library (its counts
# go to COUNTS/NAME.gcda, where the optimized compile of NAME reads them:
# index/CMakeLists.txt), then removes the optimized objects built with older
# counts, so that make compiles them again with these. This runs only when
# the library's sources changed (the trainer was linked again).
# -DTRAINER= -DWORK= -DCOUNTS= -DOBJECTS= -DSTAMP= (bench/CMakeLists.txt).
file(GLOB stale "${COUNTS}/*.gcda")
if(stale)
  file(REMOVE ${stale})  # counts of an older build would be merged into the new ones
endif()
execute_process(COMMAND "${TRAINER}" "${WORK}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pgo_train.cmake: the training workload failed (${rc})")
endif()
file(GLOB counts "${COUNTS}/*.gcda")
if(NOT counts)
  message(FATAL_ERROR "pgo_train.cmake: the training workload left no counts in ${COUNTS}")
endif()
file(GLOB_RECURSE built "${OBJECTS}/*.o")
if(built)
  file(REMOVE ${built})
endif()
file(TOUCH "${STAMP}")
