/*  fq_recipients.h — who a request's messages go to: what a good address
    and a good recipient are, and the reading of a list of recipients.

    A request names its recipients as a JSON array of objects,

        [{"to": "a@example.com", "fields": {"name": "A"}}, ...]

    The splitter (sql/) makes each good recipient one message and rejects
    each bad one alone, with the reason these checks give, which the tenant
    reads back among the request's rejects; the HTTP API checks a request's
    from address by the same address rule. These checks are the one
    statement of both rules in C. The schema's fairq.address_problem
    (sql/migrations/0008_submit_from.sql) says the address rule again in
    SQL, word for word, and a test compares the two: they change together.

    Pure functions, no I/O and no state: texts are read, never changed, and
    need not end in NUL unless said. A reason is static text or written
    into the caller's buffer; neither is ever cut inside a UTF-8 character,
    so a reason can go into the database and into JSON as it is.
*/
#ifndef FQ_RECIPIENTS_H
#define FQ_RECIPIENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

//  Longest address in bytes (RFC 5321: a local part of 64, @, a domain of
//  255). The schema's from_addr check holds the same number.
#define FQ_RECIPIENT_ADDRESS_MAX 320

//  Room for a reason written into a caller's buffer, NUL included: enough
//  for every reason with a field name of the longest quoted in full.
#define FQ_RECIPIENT_REASON_SIZE 160

//  Why the size bytes at address are not one mail address, or NULL when
//  they are. A deliberately plain rule, for what must never reach a mail
//  header: one @, a non-empty local part of printable ASCII without
//  spaces, a dotted domain of letters, digits and hyphens, at most
//  FQ_RECIPIENT_ADDRESS_MAX bytes, no CR, LF or other control character.
//  The first fault found is named (static text), e.g. "empty address",
//  "address contains CR or LF", "address is not local@domain".
const char *fq_recipient_address_problem(const char *address, size_t size);

//  Longest recipient key in bytes: the "to" of a recipient of a channel
//  other than mail (an http request's, say), which names the recipient
//  for the tenant (its searches, its rejects) and nothing else. As long
//  as an address may be.
#define FQ_RECIPIENT_KEY_MAX FQ_RECIPIENT_ADDRESS_MAX

//  Why the size bytes at key are not a recipient key, or NULL when they
//  are: a key is opaque, 1..FQ_RECIPIENT_KEY_MAX bytes of UTF-8 without a
//  control character (C0, DEL or C1), e.g. "empty recipient key",
//  "recipient key contains a control character". Static text.
const char *fq_recipient_key_problem(const char *key, size_t size);

//  What a request asks of each of its recipients: the fields its templates
//  use, the subject's first, and how many of those go into a mail header.
typedef struct {
    const char *const *fields; //  The caller's
    size_t count;
    size_t header_count; //  The first header_count of fields are the subject's
    //  The request's channel is not mail: "to" is a recipient key
    //  (fq_recipient_key_problem), not an address, and the header fields
    //  are those of its HTTP headers rather than of a subject
    bool key_only;
} fq_recipient_rules_t;

//  Why recipient (a parsed JSON value) is refused, or NULL when it is good:
//  not an object; no "to" string, or one that is not an address (see
//  fq_recipient_address_problem; a key, fq_recipient_key_problem, when the
//  rules say key_only); "fields" neither an object nor null; a
//  field that is not a string, number or boolean; a field the rules name
//  missing; a header field whose text holds CR, LF or NUL (it would make a
//  header of its own, an injected Bcc). rules may be NULL (no field is
//  required). A reason naming a field is written into reason (reason_size
//  bytes, FQ_RECIPIENT_REASON_SIZE is enough); others are static text.
const char *fq_recipient_problem(json_t *recipient, const fq_recipient_rules_t *rules, char *reason,
                                 size_t reason_size);

//  Reads one recipient, the size bytes of JSON at text, and checks it as
//  fq_recipient_problem does; a recipient jansson cannot read (a number
//  like 1e400) is refused alone: "recipient could not be read: <why>".
//  Returns NULL when it is good, else why not. *recipient is the value
//  read, owned by the caller (json_decref), or NULL when none was.
const char *fq_recipient_read(const char *text, size_t size, const fq_recipient_rules_t *rules,
                              json_t **recipient, char *reason, size_t reason_size);

//  The "to" string of recipient and its length in *size, or NULL when
//  recipient is not an object or its "to" is not a string. Points into
//  recipient.
const char *fq_recipient_to(json_t *recipient, size_t *size);

//  ---------------------------------------------------------------------
//  A list of recipients as text
//
//  For a list that is already known to be well-formed JSON (the database's
//  own output, or a body the HTTP API has checked): the list is walked
//  where its values begin and end, without building it, and each
//  recipient is read alone (fq_recipient_read), so one that cannot be read
//  is rejected alone. Text that is not a well-formed list is noticed where
//  its shape breaks (scan->malformed), not checked in full.

typedef struct {
    const char *at;  //  The next recipient, or end
    const char *end; //  End of the list's text
    bool malformed;  //  The text is not a JSON array of values
} fq_recipients_scan_t;

//  Starts walking the JSON array of size bytes at text (the caller's, kept
//  while the scan is used). Anything after the array's closing bracket is
//  not read.
void fq_recipients_scan_start(fq_recipients_scan_t *scan, const char *text, size_t size);

//  The text of the next recipient of the list, its length in *size; NULL
//  at the end of the list, or when the text is not an array of values
//  (then scan->malformed is true, and the recipients returned before it
//  are all that could be found).
const char *fq_recipients_scan_next(fq_recipients_scan_t *scan, size_t *size);

//  Why the list of size bytes at text (well-formed JSON, as for a scan)
//  is not an array of recipients, or NULL when every element has a
//  recipient's shape: an object with "to", and no member but "to" and
//  "fields". Only the shape is looked at, never a value: each recipient's
//  values are checked alone when it is split (fq_recipient_problem), but a
//  client that sent bare addresses or named "to" otherwise ("email") would
//  see every recipient rejected, so the HTTP API refuses such a list at
//  once. Stops at the first element of another shape: its index from 0 in
//  *position (else the count of elements), and why, e.g. "expected an
//  object with \"to\", not a string" or "unknown key \"email\" (did you
//  mean \"to\"?)", static text or written into reason (reason_size bytes;
//  FQ_RECIPIENT_REASON_SIZE is enough). One pass over each element's
//  text, nothing built but a key written with escapes.
const char *fq_recipients_shape_problem(const char *text, size_t size, size_t *position,
                                        char *reason, size_t reason_size);

//  The text of the value of member "fields" of the JSON object of size
//  bytes at text, its length in *fields_size; NULL when text is not an
//  object or has no such member. The member is the one jansson reads: its
//  key read with its escapes, the last when there are two. For storing a
//  recipient's fields as they were written (0.1 stays 0.1), never written
//  again by jansson.
const char *fq_recipient_fields_text(const char *text, size_t size, size_t *fields_size);

#endif
