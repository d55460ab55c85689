/*  fq_unsubscribe_token.h — the token of a one-click unsubscribe URL
    (docs/feedback.md, "One-click unsubscribe").

    The dispatcher seals, for each mail message of a request with
    unsubscribe on, who may be unsubscribed by it: the tenant, the request
    and the recipient. fairqd's public unsubscribe listener opens the
    token it is given back, and unsubscribes exactly that recipient from
    exactly that tenant. Two programs' parts use it (actors/ and api/),
    so it lives in a folder of its own, below both.

    The token is XChaCha20-Poly1305 (libsodium's IETF construction) of the
    three, under a key derived from the operator's secret
    (unsubscribe_secret_file), with a random nonce, written in base64url
    without padding: version byte || nonce || ciphertext and tag.
    * Not forgeable: without the key no ciphertext opens (Poly1305's tag),
      and a byte changed anywhere, the version byte included (it is the
      associated data), makes the token refused whole.
    * Not guessable: 24 random bytes of nonce and a 16-byte tag; nothing of
      it can be counted through.
    * Exposes nothing: the ids and the address are encrypted, so a URL
      shown to a link scanner, a proxy or a mailing-list archive names no
      database id and no address.
    A token does not expire: an unsubscribe link must work as long as the
    mail is read (RFC 8058 asks the link to keep working; the tenant's
    suppression, once made, is what lasts). Rotating the secret turns
    every link issued before it into a refused one.

    Pure functions, no state; thread-safe once libsodium has started
    (fq_unsubscribe_key starts it).
*/
#ifndef FQ_UNSUBSCRIBE_TOKEN_H
#define FQ_UNSUBSCRIBE_TOKEN_H

#include "fq_recipients.h"
#include <stddef.h>
#include <stdint.h>

//  The key tokens are sealed with, derived from the secret: 32 bytes
//  (crypto_aead_xchacha20poly1305_ietf_KEYBYTES).
#define FQ_UNSUBSCRIBE_KEY_SIZE 32

//  Fewest bytes of secret taken: as many as the key has, so the key is
//  never weaker than a random one (`head -c 32 /dev/urandom` makes one).
#define FQ_UNSUBSCRIBE_SECRET_MIN FQ_UNSUBSCRIBE_KEY_SIZE

//  Most bytes of a secret file read: a secret is a few dozen bytes, and a
//  larger file is more likely the wrong file than a secret.
#define FQ_UNSUBSCRIBE_SECRET_MAX 4096

//  Room for a token, NUL included: version (1), nonce (24), tenant and
//  request ids (16), the longest address and the tag (16), in base64url.
#define FQ_UNSUBSCRIBE_TOKEN_SIZE (((1 + 24 + 16 + FQ_RECIPIENT_ADDRESS_MAX + 16) * 4 + 2) / 3 + 1)

//  The template field a mail request with unsubscribe on renders its
//  message's URL by, "{{unsubscribe_url}}": fairq's, whatever a
//  recipient's own fields hold by that name (a recipient cannot point
//  another's link elsewhere, nor a campaign's link at a page that does
//  not unsubscribe); no recipient needs it. Of a request without fairq's
//  unsubscribe it is a recipient's field like any other.
#define FQ_UNSUBSCRIBE_FIELD "unsubscribe_url"

//  What a URL's path is before its token: BASE/u/TOKEN.
#define FQ_UNSUBSCRIBE_PATH "/u/"

//  Who a token unsubscribes. recipient is the address as the message
//  was sent to it (the store lowercases it for the suppression).
typedef struct {
    int64_t tenant_id;
    int64_t request_id;
    char recipient[FQ_RECIPIENT_ADDRESS_MAX + 1];
} fq_unsubscribe_target_t;

//  Derives the key from secret (secret_size bytes, at least
//  FQ_UNSUBSCRIBE_SECRET_MIN) into key: a BLAKE2b of the secret, keyed by
//  the purpose's name, so the same secret used elsewhere gives another
//  key. Returns 0, or FQ_EINVAL (too short a secret, or libsodium could
//  not start).
int fq_unsubscribe_key(const void *secret, size_t secret_size,
                       unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE]);

//  Reads the secret from the file at path into key: every byte of the
//  file, a final line break excepted. The file must be a regular file,
//  not readable or writable by others than its owner and group (mode
//  0640 or stricter: it unsubscribes anyone). Returns 0, or FQ_EINVAL
//  / FQ_EIO with why in error (error_size bytes).
int fq_unsubscribe_key_file(const char *path, unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE],
                            char *error, size_t error_size);

//  Seals target under key into token (token_size bytes, at least
//  FQ_UNSUBSCRIBE_TOKEN_SIZE), ended by NUL. Returns 0, or FQ_EINVAL (an
//  id not positive, a recipient empty or longer than
//  FQ_RECIPIENT_ADDRESS_MAX, too small a token buffer).
int fq_unsubscribe_token(const unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE],
                         const fq_unsubscribe_target_t *target, char *token, size_t token_size);

//  Opens token (NUL-ended, untrusted: any bytes) under key into target.
//  Returns 0, or FQ_EINVAL for anything else: not base64url, too short or
//  too long, another version, a byte changed, sealed under another key,
//  or what it holds is not a target. It says no more than that, so a
//  caller cannot be made an oracle of why.
int fq_unsubscribe_open(const unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE], const char *token,
                        fq_unsubscribe_target_t *target);

#endif
