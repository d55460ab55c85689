/*  fq_address.h — actor paths and addresses.

    A path names an actor inside one system: "/user/scheduler/splitter-1",
    segments of [A-Za-z0-9._-]. An address is a path, optionally prefixed
    by the system it lives in: "fq://name/user/x" (a peer known by its
    system name) or "tcp://host:port/user/x" (the system the local gateway
    connects to at that endpoint).
*/
#ifndef FQ_ADDRESS_H
#define FQ_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

#define FQ_PATH_MAX    255 //  Longest path, bytes
#define FQ_NAME_MAX    64  //  Longest path segment or system name
#define FQ_ADDRESS_MAX 512 //  Longest address with its system part

//  True for a well-formed local path.
bool fq_path_valid(const char *path);

//  True for a valid single path segment (an actor or system name).
bool fq_name_valid(const char *name);

//  Splits address into its system part (copied into system, "" for a local
//  path) and its path (pointing into address). Returns 0 for a local path,
//  1 for a remote one, FQ_EINVAL when malformed.
int fq_address_split(const char *address, char *system, size_t system_size, const char **path);

#endif
