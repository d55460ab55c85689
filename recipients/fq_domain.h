/*  fq_domain.h — what a destination's domain is: a recipient's mail
    domain, or the host of an http request's URL, as a destination names
    it (sql/migrations/0016_destinations.sql).

    A domain is named in lowercase, as the schema keeps it: callers lower
    a name first (fq_domain_lower), then check it. The check is the
    schema's CHECK of destination_domains.domain, said first in words:
    the API answers with them, the store refuses with them, fairqd's
    destinations_file names them with their line. The schema stays the
    last line, and a test holds the two together. An international name
    is written as DNS carries it (xn--...).

    Pure functions, no I/O and no state.
*/
#ifndef FQ_DOMAIN_H
#define FQ_DOMAIN_H

#include <stdbool.h>
#include <stddef.h>

//  Longest domain in bytes (RFC 1035's name, without its final dot), and
//  longest label of one. The schema checks the first.
#define FQ_DOMAIN_MAX       253
#define FQ_DOMAIN_LABEL_MAX 63

//  Room for a domain and its NUL.
#define FQ_DOMAIN_SIZE (FQ_DOMAIN_MAX + 1)

//  Lowers the ASCII capitals of domain (NUL-terminated) in place.
void fq_domain_lower(char *domain);

//  Why the size bytes at domain are not a destination's domain, or NULL
//  when they are: 1..FQ_DOMAIN_MAX bytes of labels of a-z, 0-9 and '-'
//  between dots, each label 1..FQ_DOMAIN_LABEL_MAX bytes that neither
//  starts nor ends with '-'. The first fault found, as static text:
//  "is empty", "is longer than 253 bytes", "holds a character other than
//  a-z 0-9 - . (an international name is written xn--...)", "has an
//  empty label (two dots, or a dot at an end)", "has a label longer than
//  63 bytes", "has a label that starts or ends with '-'". Capitals are
//  refused as "other characters": lower first.
const char *fq_domain_problem(const char *domain, size_t size);

#endif
