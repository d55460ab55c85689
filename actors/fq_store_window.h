/*  fq_store_window.h — how far the store may fall behind the senders'
    answers, in the dispatcher.

    The dispatcher tells the store every outcome (an ack or a nack), each
    message stamped with the running count of outcomes told through it;
    the store answers STORE_WRITTEN with the count through which it has
    committed them. Those in between live in fairqd's memory only: a crash
    loses them, and their messages are sent again.

    While more than the window of them are unwritten (those the dispatcher
    has gathered and not told yet included), the dispatcher keeps back the
    credit the answers give back: nothing new goes out until the store
    catches up. That bounds what a crash sends twice. A message delivered
    and not written is either an answer counted here, or in flight (at
    most the senders' credit). Credit comes back only while at most the
    window is unwritten, and after that only answers add to it, each taking
    one message out of flight; so the two together never exceed credit +
    window. Without it a database slower than the senders let the
    unwritten answers grow without end (docs/delivery.md). */
#ifndef FQ_STORE_WINDOW_H
#define FQ_STORE_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

//  The window, in store batches (ack_batch outcomes each): the store
//  writes one while the next gathers, and after a slow write the answers
//  that came meanwhile join one statement, up to the window. A wider one
//  buys throughput with newcomers' waits: the pipeline benchmark on 2
//  cores (README, 29 Nov) measured 56-59 % of its floor and a new
//  tenant's p99 of 24-39 ms (one run 83) at 4; 60-63 % and 43-68 ms at
//  8 and 16, where dispatch rarely pauses and leaves a new request's
//  split less of the CPU.
#define FQ_STORE_WINDOW_BATCHES 4

typedef struct {
    uint64_t told;    //  Outcomes told to the store since the start
    uint64_t written; //  The count through which the store wrote them
    uint64_t window;  //  Most unwritten before credit is kept back
} fq_store_window_t;

//  The window for ack_batch: ack_batch * FQ_STORE_WINDOW_BATCHES
//  outcomes, at least 1. The store writes at most that many at once.
uint64_t fq_store_window_size(uint64_t ack_batch);

//  A window of fq_store_window_size(ack_batch) outcomes.
void fq_store_window_init(fq_store_window_t *self, uint64_t ack_batch);

//  Counts n outcomes told to the store; returns the count through them,
//  which their message carries (STORE_ACKS' and STORE_NACK's through).
uint64_t fq_store_window_tell(fq_store_window_t *self, uint64_t n);

//  The store's STORE_WRITTEN: everything told through through is written
//  (or was lost with a store that restarted: it is not waited for). A
//  count beyond what was told is taken as what was told.
void fq_store_window_written(fq_store_window_t *self, uint64_t through);

//  Outcomes not known written: those told and not written, plus gathered
//  (answers the dispatcher holds, not yet told).
uint64_t fq_store_window_unwritten(const fq_store_window_t *self, uint64_t gathered);

//  Whether credit is kept back now: more than the window unwritten.
bool fq_store_window_full(const fq_store_window_t *self, uint64_t gathered);

#endif
