/*  fq_utf8.h — the one UTF-8 check of fairq.

    Well-formed means RFC 3629: no overlong forms, no UTF-16 surrogates,
    nothing above U+10FFFF. Every function reads at most size bytes, so a
    text need not end in NUL. Pure functions, no allocation.
*/
#ifndef FQ_UTF8_H
#define FQ_UTF8_H

#include <stdbool.h>
#include <stddef.h>

//  How many bytes the sequence that lead starts has (1 to 4), or 0 for a
//  byte that cannot start one (a continuation byte, C0, C1, F5..FF). For
//  readers that see a text one byte at a time (the CLI's CSV parser).
size_t fq_utf8_lead_length(unsigned char lead);

//  True when second may follow lead as the second byte of a sequence: the
//  range is narrower than 80..BF after E0 and F0 (overlong forms), ED
//  (surrogates) and F4 (beyond U+10FFFF).
bool fq_utf8_second_ok(unsigned char lead, unsigned char second);

//  Length of the well-formed sequence at the start of text, of which size
//  bytes may be read; 0 when there is none (or size is 0).
size_t fq_utf8_sequence(const char *text, size_t size);

//  Offset of the first byte of text that does not start a well-formed
//  sequence, or size when all of it is valid.
size_t fq_utf8_invalid_at(const char *text, size_t size);

//  True when all size bytes of text are well-formed UTF-8.
bool fq_utf8_valid(const char *text, size_t size);

//  Replaces, in place, each byte of text (size bytes) that does not start
//  a well-formed sequence with replacement (an ASCII byte): for texts from
//  outside that must become UTF-8 (a JSON string, a database parameter)
//  while keeping every good character as it was.
void fq_utf8_replace_invalid(char *text, size_t size, char replacement);

//  The longest length up to max of text (size bytes) that does not end
//  inside a sequence: for cutting a text to fit without splitting a
//  character.
size_t fq_utf8_prefix(const char *text, size_t size, size_t max);

#endif
