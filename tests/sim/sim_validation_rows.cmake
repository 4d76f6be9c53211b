# Runs bench_sim_validation on the published points with --check PINS: every prediction must
# match its regression pin (data/validation/pinned.json) within the file's tolerance and each
# set's median |error| must stay within its bound. Then checks one row per point with a positive
# predicted busbw, that a moved pin fails naming the point, and that a point missing a field is
# rejected with a message naming the point and the field.
#   cmake -DTOOL=<bench_sim_validation> -DDATA=<published.json> -DPINS=<pinned.json>
#         -DWORK=<dir> -P sim_validation_rows.cmake
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${TOOL} --data ${DATA} --json ${WORK}/report.json --check ${PINS}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench_sim_validation --check failed (${rc}):\n${out}\n${err}")
endif()
string(FIND "${out}" "# set development:" developmentLine)
if(developmentLine EQUAL -1)
  message(FATAL_ERROR "no development-set median line:\n${out}")
endif()
file(READ ${DATA} data)
file(READ ${WORK}/report.json report)
string(JSON expected LENGTH "${data}" points)
string(JSON reported LENGTH "${report}" points)
if(expected EQUAL 0 OR NOT expected EQUAL reported)
  message(FATAL_ERROR "${expected} points in ${DATA}, ${reported} in the report")
endif()
math(EXPR last "${expected} - 1")
foreach(i RANGE ${last})
  string(JSON id GET "${data}" points ${i} id)
  string(JSON reportedId GET "${report}" points ${i} id)
  string(JSON busbw GET "${report}" points ${i} predicted_busbw_GBps)
  if(NOT id STREQUAL reportedId OR NOT busbw GREATER 0)
    message(FATAL_ERROR "point ${i}: expected ${id}, got ${reportedId} with busbw ${busbw}")
  endif()
  string(FIND "${out}" "  ${id} " row)
  if(row EQUAL -1)
    message(FATAL_ERROR "no table row for ${id}:\n${out}")
  endif()
endforeach()
string(FIND "${out}" "median |error|" summary)
if(summary EQUAL -1)
  message(FATAL_ERROR "no median line:\n${out}")
endif()

# Runs the tool on `document` (written to bad.json) and fails unless it exits non-zero with
# `expected` in its error output; `what` names the case in the failure message.
function(expect_rejected document expected what)
  file(WRITE ${WORK}/bad.json "${document}")
  execute_process(COMMAND ${TOOL} --data ${WORK}/bad.json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(FIND "${err}" "${expected}" named)
  if(rc EQUAL 0 OR named EQUAL -1)
    message(FATAL_ERROR "${what} not reported as expected (${rc}):\n${err}")
  endif()
endfunction()

string(JSON firstId GET "${data}" points 0 id)
# A pin that no longer matches the model fails naming the point.
file(READ ${PINS} pins)
string(JSON movedPins SET "${pins}" points "${firstId}" predicted_busbw_GBps 1.0)
file(WRITE ${WORK}/moved_pins.json "${movedPins}")
execute_process(COMMAND ${TOOL} --data ${DATA} --check ${WORK}/moved_pins.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${err}" "check failed: ${firstId}: predicted" moved)
if(rc EQUAL 0 OR moved EQUAL -1)
  message(FATAL_ERROR "a moved pin was not reported (${rc}):\n${err}")
endif()
# Bad input: the first point without "nodes".
string(JSON bad REMOVE "${data}" points 0 nodes)
expect_rejected("${bad}" "point 0 (\"${firstId}\"): missing field \"nodes\"" "missing field")
# Bad input: an unknown preset.
string(JSON bad SET "${data}" points 0 system "\"dgx-z900\"")
expect_rejected("${bad}" "point \"${firstId}\": field \"system\"" "unknown preset")
