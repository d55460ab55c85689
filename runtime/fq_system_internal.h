/*  fq_system_internal.h — what the runtime's modules share about a system
    (internal; applications use fq_system.h). */
#ifndef FQ_SYSTEM_INTERNAL_H
#define FQ_SYSTEM_INTERNAL_H

#include "fq_actor.h"
#include "fq_registry.h"
#include "fq_system.h"
#include <pthread.h>

//  Path of the gateway actor that carries messages to remote systems.
#define FQ_GATEWAY_PATH "/system/gateway"

//  Malformed frames are logged at the first and then every this many, not
//  one line each: a peer sending garbage must not flood the log (they are
//  all counted, fq_actor_stats_t.malformed).
#define FQ_MALFORMED_LOG_EVERY 1000

struct fq_system {
    char name[FQ_NAME_MAX + 1];
    char id[64]; //  Unique per process: keeps inproc endpoints apart
    fq_registry_t *registry;
    fq_system_config_t config;
    fq_cell_t *user_guardian;
    fq_cell_t *system_guardian;
    pthread_mutex_t lock; //  Serialises spawns into the guardians
    atomic_bool failed;
    char failure[FQ_PATH_MAX + 320];
    atomic_uint_fast64_t dead_letters;
    atomic_uint_fast64_t client_seq;
};

#endif
