/*  fq_mail_headers.h — the extra header fields a request gives its mail
    ("headers" and "reply_to" of a submit, api/API.md), and the one rule
    they are held to.

    Two programs check them: fairqd's HTTP API when a request is submitted,
    so that a bad one is a 400 naming it rather than every message of the
    request dead at delivery, and fairq-sender's MIME rendering
    (sender/fq_mime.c) before it writes them, as its last line of defence
    against a header line injected into a message, or headers stored by
    fairq.submit_keyed in SQL, which checks only part of the rule. Both ask
    this module, so the rule and the list of the fields fairq writes itself
    cannot drift apart: it is here, below both programs
    (docs/code-map.md), not in either of them.

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
//  of its own, which fairq is not for. fairq.submit_keyed holds the same
//  number (sql/migrations/0013_request_headers.sql): both must agree.
#define FQ_MAIL_HEADERS_MAX 32

//  Most bytes of a request's extra headers, names and values together.
//  They travel in every MSG of the request (docs/protocol.md), up to 256
//  of them in one MESSAGES frame: 8 KiB each keeps a frame's headers
//  within 2 MiB, far below the gateway's frame limit, while a List-
//  Unsubscribe of a long signed URL fits with room to spare.
//  fairq.submit_keyed holds the same number (0013): both must agree.
#define FQ_MAIL_HEADERS_BYTES_MAX (8 * 1024)

//  RFC 5322 2.1.1: a line is at most 998 characters, CRLF excluded. An
//  extra header is written on one line, "Name: value"; fq_mime folds the
//  fields it writes itself within it.
#define FQ_MAIL_HEADER_LINE_MAX 998

//  Room for a reason written by fq_mail_header_problem or
//  fq_mail_headers_problem, NUL included.
#define FQ_MAIL_HEADER_REASON_SIZE 128

//  The field a request gives by a field of its own, reply_to (one
//  address, checked as one), never among its headers: the dispatcher
//  carries it in each message's headers as this field. The store writes
//  the name in SQL too (sql/fq_store_requests.c, and 0013's check of
//  headers): sql/ may not include this header, so those spell it again
//  and must agree with it.
#define FQ_MAIL_HEADER_REPLY_TO "Reply-To"

//  The fields of one-click unsubscribe (RFC 2369 3.2, RFC 8058), and the
//  one value the second takes. fairq writes both for mail of a request
//  with unsubscribe on (docs/feedback.md, "One-click unsubscribe"):
//  fairqd's dispatcher makes the first's value (the MSG's
//  list_unsubscribe), fairq-sender writes the two. They are not among the
//  fields fq_mail_header_owned names: a request without fairq's
//  unsubscribe may give its own (a tenant that runs its own unsubscribe
//  page, as before fairq had one); one with it may not (the API refuses
//  it at submit, fairq-sender a message that carries both). The store
//  spells the names in SQL too (0021, and the dispatcher's load in
//  sql/fq_store_requests.c): sql/ may not include this header, so those
//  must agree with it.
#define FQ_MAIL_HEADER_LIST_UNSUBSCRIBE      "List-Unsubscribe"
#define FQ_MAIL_HEADER_LIST_UNSUBSCRIBE_POST "List-Unsubscribe-Post"
#define FQ_MAIL_LIST_UNSUBSCRIBE_ONE_CLICK   "List-Unsubscribe=One-Click"

//  Whether name (any case) is List-Unsubscribe or List-Unsubscribe-Post:
//  a field fairq writes itself when one-click unsubscribe is on.
bool fq_mail_header_unsubscribe(const char *name);

//  Whether c is printable ASCII, space included: a byte a header line
//  carries as it is. The one such test of the mail fairq writes.
bool fq_mail_printable(unsigned char c);

//  How many bytes text (len of them) starts with that are printable ASCII
//  or tab: len when all are, which is what an unstructured header's text
//  may hold unencoded (RFC 5322 2.2, 3.2.2).
size_t fq_mail_printable_span(const char *text, size_t len);

//  Whether name (any case) is a field fairq writes itself or that only a
//  relay or the receiving side may write: Date, From, Sender, To, Cc,
//  Bcc, Subject, Message-ID, MIME-Version, every Content- field,
//  Return-Path, Received, every Resent- field, DKIM-Signature, every ARC-
//  field and Authentication-Results. A second one given would contradict
//  fairq's (two Content-Types, two Message-IDs) and leave receivers to
//  pick one, change how the one body part renders (Content-Disposition),
//  add recipients the envelope does not (Cc, Bcc), or forge a trace or a
//  signature.
bool fq_mail_header_owned(const char *name);

//  The entries of the list fq_mail_header_owned checks, in the order
//  above: the ith, or NULL past the last. One that ends in '-' is a
//  prefix ("Content-": Content-Type, Content-Disposition...), the others
//  whole names. For tests and documentation.
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
//  name and value end in NUL. The rule of one header; a request's headers
//  together are checked by fq_mail_headers_problem.
int fq_mail_header_problem(const char *name, const char *value, char *reason, size_t reason_size);

//  What a set of headers is, for fq_mail_headers_problem.
typedef enum {
    //  A request's headers as a submit gives them: Reply-To is not among
    //  them (it is the request's reply_to).
    FQ_MAIL_HEADERS_GIVEN,
    //  As a message carries them (the MSG's headers, docs/protocol.md):
    //  the request's headers and its reply_to as one Reply-To, which
    //  counts against neither limit.
    FQ_MAIL_HEADERS_CARRIED,
} fq_mail_headers_form_t;

//  Why the n headers names[i]: values[i] cannot go into a message
//  together, or 0 when they can: the one rule of a request's headers,
//  which fairqd's API checks at submit and fairq-sender before it writes
//  them. In their order, each header is held to fq_mail_header_problem,
//  then:
//  * FQ_EINVAL: Reply-To, in any case, among the headers GIVEN; a name
//    given before, in any case (RFC 5322 field names are case-insensitive:
//    X-Tag and x-tag are one field; two Reply-To of a message CARRIED are
//    one given twice); more than FQ_MAIL_HEADERS_MAX headers, or more than
//    FQ_MAIL_HEADERS_BYTES_MAX bytes of names and values together, with
//    Reply-To counted in neither when CARRIED.
//  On a problem, *at is the index of the header at fault (where a limit
//  is crossed for the limits; 0 when names or values is NULL) and reason
//  says why, as fq_mail_header_problem's quoting no byte of a header.
//  Each name and value ends in NUL; names and values may be NULL when n
//  is 0. A check of whole sets: a body of a thousand headers is refused
//  by the first FQ_MAIL_HEADERS_MAX + 1 of them.
int fq_mail_headers_problem(const char *const *names, const char *const *values, size_t n,
                            fq_mail_headers_form_t form, size_t *at, char *reason,
                            size_t reason_size);

#endif
