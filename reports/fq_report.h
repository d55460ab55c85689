/*  fq_report.h — reports that come back after delivery, as raw messages:
    delivery status notifications (DSN, RFC 3464: multipart/report with
    report-type=delivery-status) and abuse feedback reports (ARF, RFC
    5965: report-type=feedback-report). fairqd's API reads them
    (POST /v1/feedback, api/API.md) as an operator's MTA pipe or bounce
    mailbox poller posts them; docs/feedback.md says what is done with
    them.

    Pure parsing, no I/O: GMime (libgmime-3.0) reads the MIME structure,
    decodes the parts and parses Message-IDs and addresses; the fields of
    a message/delivery-status or message/feedback-report part (header
    blocks, RFC 3464 2.1 and RFC 5965 3.1, which GMime hands over as an
    opaque body) and of a text/rfc822-headers part are read by a small
    field reader here, on the part GMime has already decoded.

    Input is untrusted: anything that is not a report is an error naming
    what is wrong, never a crash, and every size is bounded (the message,
    the parts read, each field, the recipients).
*/
#ifndef FQ_REPORT_H
#define FQ_REPORT_H

#include <stddef.h>
#include <stdint.h>

//  Largest report read, in bytes. fairq's messages are at most 1 MiB of
//  body and 1 MiB of text body and their headers (requests_body_check,
//  requests_text_body_check); a report that returns one whole, base64 at
//  worst (4/3), stays under this. Larger is not a report of fairq's mail.
#define FQ_REPORT_SIZE_MAX (4 * 1024 * 1024)

//  Recipients read from one report. fairq sends each message to one
//  recipient; an MTA may list a few more of the same transaction.
#define FQ_REPORT_RECIPIENTS_MAX 100

//  Longest field value kept, in bytes (longer ones are cut): an SMTP
//  reply line is at most 512 (RFC 5321 4.5.3.1.5), and events keep 2000.
#define FQ_REPORT_FIELD_MAX 1000

typedef enum {
    FQ_REPORT_DSN = 1, //  A delivery status notification (RFC 3464)
    FQ_REPORT_ARF,     //  An abuse feedback report (RFC 5965)
} fq_report_kind_t;

//  One recipient of a report. Strings are the report's (freed with it);
//  NULL when the report does not say.
typedef struct {
    //  DSN: Final-Recipient; ARF: Original-Rcpt-To, else the returned
    //  message's To. The address alone: its type ("rfc822;") and angle
    //  brackets are dropped
    char *recipient;
    //  DSN: Original-Recipient (what the sender gave as RCPT TO, when the
    //  MTA kept it); ARF: NULL
    char *original_recipient;
    //  DSN only: Action lowercased (failed, delayed, delivered, relayed,
    //  expanded), Status (5.1.1) and Diagnostic-Code ("smtp; 550 5.1.1
    //  ..."), as written
    char *action;
    char *status;
    char *diagnostic;
} fq_report_recipient_t;

typedef struct {
    fq_report_kind_t kind;
    //  The Message-ID of the message reported on, from the returned
    //  message (message/rfc822) or its headers (text/rfc822-headers),
    //  without its angle brackets; NULL when the report returns none
    char *message_id;
    //  ARF: Feedback-Type lowercased (abuse, fraud, virus, other,
    //  not-spam, ...); DSN: NULL
    char *feedback_type;
    fq_report_recipient_t *recipients;
    size_t count;
} fq_report_t;

//  Parses size bytes of data, a raw message (headers and body, CRLF or LF
//  line ends), into a report. Returns a new report the caller destroys,
//  or NULL with the reason in error (lowercase, no period: "not a report:
//  the message is text/plain, not multipart/report"; "message too
//  large"...) for anything that is not a DSN or an ARF report or that
//  runs out of memory.
fq_report_t *fq_report_parse(const char *data, size_t size, char *error, size_t error_size);

//  Frees a report and nulls *self_p. Safe twice.
void fq_report_destroy(fq_report_t **self_p);

//  The kind's name: "dsn", "arf".
const char *fq_report_kind_name(fq_report_kind_t kind);

//  fairq's message id from the Message-ID fairq-sender writes
//  (sender/fq_mime.c: "<fairq.ID@domain>", ID the message's id), given
//  with or without its angle brackets. Returns 0 with *id, or -1 when
//  message_id is not one of fairq's (the domain is not checked: each
//  sender may have its own).
int fq_report_fairq_id(const char *message_id, int64_t *id);

//  The address in an address field as reports write it: "rfc822;
//  Bob@Example.com", "<bob@example.com>", "bob@example.com": the part
//  after the address type's ';', spaces and angle brackets dropped, into
//  out (cut to out_size - 1 bytes). Returns out's length (0: none).
size_t fq_report_address(const char *field, char *out, size_t out_size);

#endif
