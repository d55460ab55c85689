/*  fq_mail_headers.h — the extra header fields a request gives its mail
    ("headers" and "reply_to" of a submit, api/API.md), and the one rule
    they are held to.

    Two programs check them: fairqd's HTTP API when a request is submitted,
    so that a bad one is a 400 naming it rather than every message of the
    request dead at delivery, and fairq-sender's MIME rendering
    (sender/fq_mime.c) before it writes them, as its last line of defence
    against a header line injected into a message. Both ask this module, so
    the rule and the list of the fields fairq writes itself cannot drift
    apart: it is here, below both programs (docs/code-map.md), not in
    either of them.

    A header's value is taken as it is given: it is not a template. Pure
    functions, no I/O and no state.
*/
#ifndef FQ_MAIL_HEADERS_H
#define FQ_MAIL_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

//  Most extra headers a request may give. Enough for the List-* fields of
//  RFC 2369 and 8058, Precedence, Auto-Submitted and a campaign's own X-
//  tags several times over; a request that needs more is building a mail
//  of its own, which fairq is not for.
#define FQ_MAIL_HEADERS_MAX 32

//  Most bytes of a request's extra headers, names and values together.
//  They travel in every MSG of the request (docs/protocol.md), up to 256
//  of them in one MESSAGES frame: 8 KiB each keeps a frame's headers
//  within 2 MiB, far below the gateway's frame limit, while a List-
//  Unsubscribe of a long signed URL fits with room to spare.
#define FQ_MAIL_HEADERS_BYTES_MAX (8 * 1024)

//  RFC 5322 2.1.1: a line is at most 998 characters, CRLF excluded. An
//  extra header is written on one line, "Name: value".
#define FQ_MAIL_HEADER_LINE_MAX 998

//  Room for a reason written by fq_mail_header_problem, NUL included.
#define FQ_MAIL_HEADER_REASON_SIZE 128

//  Whether name (any case) is a field fairq writes itself or that only
//  the receiving side may write: Date, From, To, Subject, Message-ID,
//  MIME-Version, Content-Type, Content-Transfer-Encoding, Return-Path. A
//  second one given would contradict fairq's (two Content-Types, two
//  Message-IDs) and leave receivers to pick one.
bool fq_mail_header_owned(const char *name);

//  The fields fq_mail_header_owned names, in the order above: the ith, or
//  NULL past the last. For tests and documentation.
const char *fq_mail_header_owned_name(size_t i);

//  Why the header name: value cannot go into a message, or 0 when it can.
//  The reason, written into reason (reason_size bytes), never quotes a
//  byte of name or value (either may hold a line break), so a caller
//  names the header as it sees fit:
//  * FQ_EHEADER: a byte in name that is not printable ASCII, or is ':' or
//    a space (RFC 5322 3.6.8), or in value a CR, LF or other control
//    character but tab, or a byte that is not ASCII: what could add a
//    header line, and what a header cannot carry unencoded;
//  * FQ_EINVAL: no name or no value, a field fairq writes itself
//    (fq_mail_header_owned), or a line "name: value" longer than
//    FQ_MAIL_HEADER_LINE_MAX.
//  name and value end in NUL. How many headers a request gives, and their
//  bytes together, are its caller's to count (FQ_MAIL_HEADERS_MAX,
//  FQ_MAIL_HEADERS_BYTES_MAX), as are names given twice.
int fq_mail_header_problem(const char *name, const char *value, char *reason, size_t reason_size);

#endif
