# links_http_only.cmake — fails when PROGRAM links a library that the fairq
# CLI must not: libpq (the database is fairqd's), CZMQ, ZeroMQ or msgpack
# (the actor runtime is fairqd's and the senders'). The CLI speaks HTTP
# only (cli/CMakeLists.txt). Both the libraries the program names itself
# (readelf -d, its NEEDED entries) and those they bring in (ldd) count.
#
#     cmake -DPROGRAM=path/to/fairq -P links_http_only.cmake

if(NOT PROGRAM OR NOT EXISTS "${PROGRAM}")
    message(FATAL_ERROR "links_http_only: no program at \"${PROGRAM}\" (-DPROGRAM=PATH)")
endif()

# libpq.so.5, libczmq.so.4, libzmq.so.5, libmsgpackc.so.2 (or libmsgpack-c)
set(FORBIDDEN_RE "^lib(pq|czmq|zmq|msgpack[a-z-]*)\\.so")

find_program(READELF readelf)
find_program(LDD ldd)
if(NOT READELF AND NOT LDD)
    message(FATAL_ERROR "links_http_only: neither readelf nor ldd is installed")
endif()

set(listing "")
if(READELF)
    execute_process(COMMAND ${READELF} -d ${PROGRAM}
        OUTPUT_VARIABLE needed RESULT_VARIABLE rc ERROR_VARIABLE error)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "links_http_only: readelf -d ${PROGRAM} failed: ${error}")
    endif()
    string(APPEND listing "${needed}")
endif()
if(LDD)
    execute_process(COMMAND ${LDD} ${PROGRAM}
        OUTPUT_VARIABLE loaded RESULT_VARIABLE rc ERROR_VARIABLE error)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "links_http_only: ldd ${PROGRAM} failed: ${error}")
    endif()
    string(APPEND listing "${loaded}")
endif()

string(REGEX MATCHALL "lib[A-Za-z0-9_+.-]*\\.so[.0-9]*" libraries "${listing}")
list(REMOVE_DUPLICATES libraries)
set(found "")
foreach(library IN LISTS libraries)
    if(library MATCHES "${FORBIDDEN_RE}")
        list(APPEND found ${library})
    endif()
endforeach()
if(found)
    list(JOIN found ", " found)
    message(FATAL_ERROR "links_http_only: ${PROGRAM} links ${found}; the CLI may link only "
                        "libcurl, jansson and fairq's code without dependencies (base/, templates/)")
endif()
list(LENGTH libraries count)
message(STATUS "links_http_only: ${PROGRAM}: ${count} libraries, none of libpq, CZMQ, ZeroMQ, msgpack")
