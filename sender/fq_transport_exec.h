/*  fq_transport_exec.h — the exec kind of fq_transport, private to sender/.

    Runs a command once per message: an operator's script that hands the
    message on (to an SMS gateway, a chat, a queue). The command is an
    absolute program path and its arguments, split on blanks (spaces and
    tabs): no shell runs it, so nothing of a message can become a command.
    A message reaches it only through

    * its stdin: for the email channel the full RFC 5322 message (as the
      smtp kind sends it, CRLF line ends), for any other channel the body;
    * its environment: FAIRQ_MESSAGE_ID, FAIRQ_TENANT, FAIRQ_REQUEST_ID,
      FAIRQ_ATTEMPT, FAIRQ_CHANNEL, FAIRQ_TO, FAIRQ_METHOD (empty when the
      message has none), besides fairq-sender's own environment without
      any variable whose name starts with FAIRQ_ (fairq-sender's settings,
      its SMTP password among them, stay its own).

    Its stdout is discarded; the first line of its stderr is the error.
    It runs in a process group of its own, with the default signal mask
    and dispositions, and no descriptor of fairq-sender's but 0, 1 and 2.

        exit 0                      delivered
        exit 75 (EX_TEMPFAIL)       transient
        killed by a signal          transient
        timed out                   transient: its process group is killed
        could not be started        transient (the sender's set-up)
        any other exit              permanent

    The error says "exit N: <first line of stderr>", "killed by SIGNAME:
    <...>" or "timed out after N ms".
*/
#ifndef FQ_TRANSPORT_EXEC_H
#define FQ_TRANSPORT_EXEC_H

#include "fq_transport.h"

typedef struct fq_exec fq_exec_t;

//  The exec kind for cfg: command (its program must be an absolute path
//  to an executable file) and timeout_ms. NULL with the reason in error.
fq_exec_t *fq_exec_new(const fq_transport_config_t *cfg, char *error, size_t error_size);

//  Frees; safe on NULL, nulls *self_p.
void fq_exec_destroy(fq_exec_t **self_p);

//  Runs the command for msg with input (len bytes) on its stdin, waits
//  for it (up to the timeout) and classifies its end (above). Safe in a
//  threaded program: the command starts by posix_spawn, and a SIGPIPE
//  from a command that does not read its input is kept from the process.
fq_delivery_result_t fq_exec_run(fq_exec_t *self, const fq_delivery_t *msg, const char *input,
                                 size_t len, char *error, size_t error_size);

#endif
