/*  fq_messages.c — generated codecs of fairq's messages. */
#include "fq_messages.h"
#include <stdio.h>
#include <string.h>

#define FQ_SCHEMA_FILE "fq_messages.def"
#include "fq_schema_define.h"

const fq_gateway_admit_t fq_protocol_fairqd_admit[] = {
    {FQ_MSG_HELLO, FQ_PROTOCOL_DISPATCHER_PATH, FQ_ADMIT_ASK},
    {FQ_MSG_CREDIT, FQ_PROTOCOL_DISPATCHER_PATH, FQ_ADMIT_TELL},
    {FQ_MSG_ACK, FQ_PROTOCOL_DISPATCHER_PATH, FQ_ADMIT_TELL},
    {FQ_MSG_ACKS, FQ_PROTOCOL_DISPATCHER_PATH, FQ_ADMIT_TELL},
    {FQ_MSG_NACK, FQ_PROTOCOL_DISPATCHER_PATH, FQ_ADMIT_TELL},
    {FQ_MSG_BYE, FQ_PROTOCOL_DISPATCHER_PATH, FQ_ADMIT_TELL},
};
const size_t fq_protocol_fairqd_admit_count =
    sizeof fq_protocol_fairqd_admit / sizeof fq_protocol_fairqd_admit[0];

const fq_gateway_admit_t fq_protocol_sender_admit[] = {
    {FQ_MSG_MESSAGE, FQ_PROTOCOL_SENDER_PATH, FQ_ADMIT_TELL},
    {FQ_MSG_MESSAGES, FQ_PROTOCOL_SENDER_PATH, FQ_ADMIT_TELL},
    {FQ_MSG_WELCOME, FQ_PROTOCOL_SENDER_PATH, FQ_ADMIT_REPLY},
    //  An ask of HELLO that fairqd's gateway or dispatcher could not take
    {FQ_MSG_ERROR, FQ_PROTOCOL_SENDER_PATH, FQ_ADMIT_REPLY},
};
const size_t fq_protocol_sender_admit_count =
    sizeof fq_protocol_sender_admit / sizeof fq_protocol_sender_admit[0];

//  Most counters one STATS reply carries.
#define S_STATS_MAX 32

const char *fq_capability_next(const char **at, size_t *length)
{
    const char *item = *at;
    if (!item)
        return NULL;
    while (*item == ' ')
        item++;
    const char *end = item + strcspn(item, ",");
    const char *last = end;
    while (last > item && last[-1] == ' ')
        last--;
    *length = (size_t)(last - item);
    *at = *end ? end + 1 : NULL;
    return item;
}

void fq_stats_reply(fq_ctx_t *ctx, const fq_msg_t *query, const char *const *keys,
                    const uint64_t *values, size_t count)
{
    char text[S_STATS_MAX][24];
    const char *shown[S_STATS_MAX];
    if (count > S_STATS_MAX)
        count = S_STATS_MAX;
    for (size_t i = 0; i < count; i++) {
        snprintf(text[i], sizeof text[i], "%llu", (unsigned long long)values[i]);
        shown[i] = text[i];
    }
    fq_stats_t stats = {.values = {(uint32_t)count, (const char **)keys, shown}};
    fq_reply(ctx, query, &fq_stats_desc, &stats);
}

//  How often fq_drain_wait asks; and how long one ask may take.
#define S_DRAIN_POLL_MS 50
#define S_DRAIN_ASK_MS  1000

int fq_drain_wait(fq_system_t *sys, const char *path, int timeout_ms)
{
    fq_client_t *client = fq_client_new(sys);
    if (!client)
        return -1;
    int64_t deadline = zclock_mono() + timeout_ms;
    int left = -1;
    while (true) {
        fq_drain_t drain = {.timeout_ms = (uint32_t)timeout_ms};
        fq_msg_t reply;
        fq_drained_t drained;
        if (fq_client_ask(client, path, &fq_drain_desc, &drain, S_DRAIN_ASK_MS, &reply) == 0 &&
            fq_msg_decode(&reply, &fq_drained_desc, &drained) == 0)
            left = (int)drained.left;
        if (left == 0 || zclock_mono() >= deadline)
            break;
        zclock_sleep(S_DRAIN_POLL_MS);
    }
    fq_client_destroy(&client);
    return left;
}
