/*  fq_mime.h — one message as RFC 5322 text, for SMTP and for mbox files.

    fq_mime_render writes the header block the transports promise
    (fq_transport.h) and the body in quoted-printable, with CRLF line ends
    as SMTP wants them:

        Date: Tue, 14 Nov 2023 22:13:20 +0000
        From: Shop <shop@example.com>
        To: ann@example.org
        Subject: =?UTF-8?B?Q2Fmw6k=?=
        Message-ID: <fairq.42@example.com>
        MIME-Version: 1.0
        Content-Type: text/plain; charset=UTF-8
        Content-Transfer-Encoding: quoted-printable
        X-Campaign: spring            (the extra headers, in order)

        Bonjour =C3=A0 tous         (body lines at most 76 characters)

    An HTML message with a plain-text alternative (text_body) is
    multipart/alternative instead: the same header block up to
    MIME-Version, then

        Content-Type: multipart/alternative; boundary="=_fairq_<32 hex>"
        X-Campaign: spring            (the extra headers, on the top level)

        --=_fairq_...
        Content-Type: text/plain; charset=UTF-8
        Content-Transfer-Encoding: quoted-printable

        (the text, encoded as above)
        --=_fairq_...
        Content-Type: text/html; charset=UTF-8
        Content-Transfer-Encoding: quoted-printable

        (the HTML)
        --=_fairq_...--

    the least preferred part first (RFC 2046 5.1.4), and a boundary of
    random hex that neither encoded part holds (checked; "=_" cannot occur
    in quoted-printable anyway). Without a text_body, or for a plain-text
    body, the message is the single part above, as before.

    Everything in a header comes from tenants, through templates: a CR or
    LF in a subject, an address or an extra header would let a tenant add
    header lines (Bcc: ...) or end the header block early, so such input is
    refused, never cleaned. Quoted-printable keeps the body 7-bit with short
    lines whatever the text, and writes a line that starts with "From " as
    "=46rom " so that mbox files need not alter it. Lines that start with
    "." are left alone: libcurl doubles the dot on the wire for SMTP.

    fq_mime_mbox_record turns rendered text into one mbox record.
*/
#ifndef FQ_MIME_H
#define FQ_MIME_H

#include "fq_error.h"
#include "fq_transport.h"
#include <stddef.h>
#include <time.h>

//  RFC 5321 caps a forward or reverse path at 256 octets, brackets
//  included: room for any address an SMTP server would take, and its NUL.
#define FQ_MIME_ADDRESS_SIZE 257

typedef struct {
    //  Domain of the Message-ID, <fairq.ID@domain>; NULL or "": the From
    //  address's domain
    const char *message_id_domain;
    //  The Date header's time; 0: now
    time_t date;
} fq_mime_options_t;

//  Renders msg as an RFC 5322 message with CRLF line ends. The Message-ID
//  depends only on msg->id and the domain, so every attempt at one
//  message carries the same one and receivers can tell a retry from a new
//  message. Returns 0 with *text a NUL-terminated string the caller frees
//  and *len its length. Else *text is NULL, error holds the reason and the
//  code says what kind it is:
//  * FQ_EHEADER: a CR, LF or other control character in the subject, an
//    address or an extra header, or a byte that is not printable ASCII in
//    an extra header: what a tenant's text could use to add header lines;
//  * FQ_EINVAL: an address that is not one address, extra headers that
//    break the rule fairqd's API checks submits by
//    (fq_mail_headers_problem: a field fairq writes itself such as From,
//    Message-ID or Content-Disposition, a name given twice in any case,
//    two Reply-To, more headers or bytes than a request may give, a line
//    over RFC 5322's 998 characters), a Reply-To that is not one address,
//    no domain for the Message-ID;
//  * FQ_ENOMEM: no memory, the one failure that retrying may cure.
int fq_mime_render(const fq_delivery_t *msg, const fq_mime_options_t *options, char **text,
                   size_t *len, char *error, size_t error_size);

//  The address of a mailbox as SMTP's MAIL FROM and RCPT TO want it:
//  "ann@example.org" for "ann@example.org", "<ann@example.org>" or
//  "Ann <ann@example.org>". Returns 0 and writes it to address (size
//  bytes); -1 when mailbox is not one printable ASCII address without
//  spaces, or is too long for address.
int fq_mime_address(const char *mailbox, char *address, size_t size);

//  0 when domain may stand right of the "@" of a Message-ID (a dot-atom
//  such as mail.example.com, or a literal such as [192.0.2.1]), else
//  FQ_EINVAL. For checking a configured domain once, up front.
int fq_mime_check_domain(const char *domain);

//  One mbox record for a message from fq_mime_render (text, len bytes):
//  the separator line "From SENDER DATE" (DATE as asctime writes it, UTC),
//  the message with LF line ends and each line that starts with "From ",
//  after any number of ">", given one more ">" (mboxrd), then an empty
//  line. Returns a string the caller frees, its length in *out_len; NULL
//  when out of memory.
char *fq_mime_mbox_record(const char *text, size_t len, const char *sender, time_t when,
                          size_t *out_len);

#endif
