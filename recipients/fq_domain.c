/*  fq_domain.c — what a destination's domain is (fq_domain.h). */
#include "fq_domain.h"

#include <string.h>

//  The characters of a label
#define S_LABEL_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"

void fq_domain_lower(char *domain)
{
    for (char *c = domain; c && *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
}

const char *fq_domain_problem(const char *domain, size_t size)
{
    if (!domain || size == 0)
        return "is empty";
    if (size > FQ_DOMAIN_MAX)
        return "is longer than 253 bytes";
    //  Characters first: the fault a person most often makes (a capital, a
    //  space, an '@', a port) is said as such, not as a bad label
    for (size_t i = 0; i < size; i++)
        if (domain[i] == '\0' || (domain[i] != '.' && !strchr(S_LABEL_CHARS, domain[i])))
            return "holds a character other than a-z 0-9 - . (an international name is "
                   "written xn--...)";
    for (size_t at = 0; at <= size;) {
        const char *dot = memchr(domain + at, '.', size - at);
        size_t length = dot ? (size_t)(dot - (domain + at)) : size - at;
        if (length == 0)
            return "has an empty label (two dots, or a dot at an end)";
        if (length > FQ_DOMAIN_LABEL_MAX)
            return "has a label longer than 63 bytes";
        if (domain[at] == '-' || domain[at + length - 1] == '-')
            return "has a label that starts or ends with '-'";
        at += length + 1;
    }
    return NULL;
}
