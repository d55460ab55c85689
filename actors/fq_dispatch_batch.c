/*  fq_dispatch_batch.c — one sender's messages of a DISPATCH, as one frame. */
#include "fq_dispatch_batch.h"
#include "fq_error.h"
#include <stdlib.h>
#include <string.h>

//  The bytes of message that count against FQ_DISPATCH_BATCH_BYTES: its
//  subject and text_body (NULL: none), body and extra headers, and a
//  rendered to (owned: an http message's URL), the text that differs in
//  size from one message to the next.
static size_t s_message_bytes(const fq_message_t *message, bool owned)
{
    size_t bytes = (message->subject ? strlen(message->subject) : 0) + strlen(message->body) +
                   (message->text_body ? strlen(message->text_body) : 0) +
                   (owned ? strlen(message->to) : 0);
    for (uint32_t i = 0; i < message->headers.count; i++)
        bytes += strlen(message->headers.keys[i]) + strlen(message->headers.values[i]);
    return bytes;
}

int fq_dispatch_batch_add(fq_dispatch_batch_t *self, const fq_message_t *message,
                          fq_dispatch_batch_item_t item)
{
    if (self->count == self->capacity) {
        uint32_t capacity = self->capacity ? self->capacity * 2 : 32;
        fq_message_t *messages = realloc(self->messages, capacity * sizeof *messages);
        if (!messages)
            return FQ_ENOMEM;
        self->messages = messages;
        fq_dispatch_batch_item_t *items = realloc(self->items, capacity * sizeof *items);
        if (!items)
            return FQ_ENOMEM;
        self->items = items;
        self->capacity = capacity;
    }
    self->messages[self->count] = *message;
    self->items[self->count] = item;
    self->count++;
    self->bytes += s_message_bytes(message, item.owned != NULL);
    return 0;
}

bool fq_dispatch_batch_full(const fq_dispatch_batch_t *self)
{
    return self->count >= FQ_DISPATCH_BATCH_MESSAGES || self->bytes >= FQ_DISPATCH_BATCH_BYTES;
}

fq_messages_t fq_dispatch_batch_frame(const fq_dispatch_batch_t *self)
{
    return (fq_messages_t){.messages = {self->count, self->messages}};
}

void fq_dispatch_batch_clear(fq_dispatch_batch_t *self)
{
    for (uint32_t i = 0; i < self->count; i++) {
        free((char *)self->messages[i].subject);
        free((char *)self->messages[i].body);
        free((char *)self->messages[i].text_body);
        free(self->items[i].owned);
    }
    self->count = 0;
    self->bytes = 0;
}

void fq_dispatch_batch_release(fq_dispatch_batch_t *self)
{
    fq_dispatch_batch_clear(self);
    free(self->messages);
    free(self->items);
    *self = (fq_dispatch_batch_t){0};
}
