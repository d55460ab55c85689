/*  fq_unsubscribe_token.c — sealing and opening one-click unsubscribe
    tokens (contract in fq_unsubscribe_token.h). */
#include "fq_unsubscribe_token.h"
#include "fq_error.h"
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  What the token's first byte says: the layout below. A new layout takes
//  a new version, and tokens of the old one are refused or read by it.
#define S_VERSION 1

//  The key's derivation is keyed by this name (16..64 bytes: BLAKE2b's
//  key), so the secret's key here is no other use's.
#define S_KEY_PURPOSE "fairq one-click unsubscribe token"

#define S_NONCE_SIZE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define S_TAG_SIZE   crypto_aead_xchacha20poly1305_ietf_ABYTES

//  The plaintext: tenant id and request id, 8 bytes each, big-endian,
//  then the recipient's bytes.
#define S_ID_SIZE        8
#define S_IDS_SIZE       (2 * S_ID_SIZE)
#define S_PLAIN_MAX      (S_IDS_SIZE + FQ_RECIPIENT_ADDRESS_MAX)
#define S_SEALED_MIN     (1 + S_NONCE_SIZE + S_IDS_SIZE + 1 + S_TAG_SIZE)
#define S_SEALED_MAX     (1 + S_NONCE_SIZE + S_PLAIN_MAX + S_TAG_SIZE)
#define S_BITS_PER_BYTE  8
#define S_BYTE_MASK      0xff
#define S_BASE64_VARIANT sodium_base64_VARIANT_URLSAFE_NO_PADDING

_Static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == FQ_UNSUBSCRIBE_KEY_SIZE,
               "the key is XChaCha20-Poly1305's");
_Static_assert(sizeof S_KEY_PURPOSE - 1 >= crypto_generichash_KEYBYTES_MIN &&
                   sizeof S_KEY_PURPOSE - 1 <= crypto_generichash_KEYBYTES_MAX,
               "the purpose is a BLAKE2b key");

int fq_unsubscribe_key(const void *secret, size_t secret_size,
                       unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE])
{
    if (!secret || secret_size < FQ_UNSUBSCRIBE_SECRET_MIN || sodium_init() < 0)
        return FQ_EINVAL;
    crypto_generichash(key, FQ_UNSUBSCRIBE_KEY_SIZE, secret, secret_size,
                       (const unsigned char *)S_KEY_PURPOSE, sizeof S_KEY_PURPOSE - 1);
    return 0;
}

int fq_unsubscribe_key_file(const char *path, unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE],
                            char *error, size_t error_size)
{
    int fd = path && *path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        fq_error_format(error, error_size, "could not open unsubscribe secret file \"%s\": %s",
                        path ? path : "", path && *path ? strerror(errno) : "no path");
        return FQ_EIO;
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fq_error_format(error, error_size, "unsubscribe secret file \"%s\" is not a regular file",
                        path);
        rc = FQ_EINVAL;
    } else if (st.st_mode & S_IRWXO) {
        //  Whoever reads it can unsubscribe any recipient of any tenant
        fq_error_format(error, error_size,
                        "unsubscribe secret file \"%s\" may be read or written by others (mode "
                        "%04o): chmod o= it",
                        path, (unsigned)(st.st_mode & (S_IRWXU | S_IRWXG | S_IRWXO)));
        rc = FQ_EINVAL;
    }
    unsigned char secret[FQ_UNSUBSCRIBE_SECRET_MAX + 1];
    size_t size = 0;
    while (rc == 0 && size < sizeof secret) {
        ssize_t n = read(fd, secret + size, sizeof secret - size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fq_error_format(error, error_size, "could not read unsubscribe secret file \"%s\": %s",
                            path, strerror(errno));
            rc = FQ_EIO;
        }
        if (n <= 0)
            break;
        size += (size_t)n;
    }
    close(fd);
    //  A final line break is how editors and `echo` end a file, not part
    //  of the secret
    if (size > 0 && secret[size - 1] == '\n')
        size--;
    if (size > 0 && secret[size - 1] == '\r')
        size--;
    if (rc == 0 && size > FQ_UNSUBSCRIBE_SECRET_MAX) {
        fq_error_format(error, error_size,
                        "unsubscribe secret file \"%s\" holds more than %d bytes: is it the "
                        "right file?",
                        path, FQ_UNSUBSCRIBE_SECRET_MAX);
        rc = FQ_EINVAL;
    } else if (rc == 0 && fq_unsubscribe_key(secret, size, key) != 0) {
        fq_error_format(error, error_size,
                        "unsubscribe secret file \"%s\" holds %zu bytes, fewer than %d (make one "
                        "with: head -c 32 /dev/urandom | base64 > FILE)",
                        path, size, FQ_UNSUBSCRIBE_SECRET_MIN);
        rc = FQ_EINVAL;
    }
    sodium_memzero(secret, sizeof secret);
    return rc;
}

static void s_put_id(unsigned char *out, int64_t id)
{
    uint64_t v = (uint64_t)id;
    for (int i = S_ID_SIZE - 1; i >= 0; i--, v >>= S_BITS_PER_BYTE)
        out[i] = (unsigned char)(v & S_BYTE_MASK);
}

static int64_t s_get_id(const unsigned char *in)
{
    uint64_t v = 0;
    for (int i = 0; i < S_ID_SIZE; i++)
        v = (v << S_BITS_PER_BYTE) | in[i];
    return (int64_t)v;
}

int fq_unsubscribe_token(const unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE],
                         const fq_unsubscribe_target_t *target, char *token, size_t token_size)
{
    size_t len = strnlen(target->recipient, sizeof target->recipient);
    if (target->tenant_id <= 0 || target->request_id <= 0 || len == 0 ||
        len > FQ_RECIPIENT_ADDRESS_MAX || token_size < FQ_UNSUBSCRIBE_TOKEN_SIZE ||
        sodium_init() < 0)
        return FQ_EINVAL;
    unsigned char plain[S_PLAIN_MAX], sealed[S_SEALED_MAX];
    s_put_id(plain, target->tenant_id);
    s_put_id(plain + S_ID_SIZE, target->request_id);
    memcpy(plain + S_IDS_SIZE, target->recipient, len);
    sealed[0] = S_VERSION;
    randombytes_buf(sealed + 1, S_NONCE_SIZE);
    unsigned long long sealed_len = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(sealed + 1 + S_NONCE_SIZE, &sealed_len, plain,
                                               S_IDS_SIZE + len, sealed, 1, NULL, sealed + 1, key);
    sodium_bin2base64(token, token_size, sealed, 1 + S_NONCE_SIZE + (size_t)sealed_len,
                      S_BASE64_VARIANT);
    sodium_memzero(plain, sizeof plain);
    return 0;
}

int fq_unsubscribe_open(const unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE], const char *token,
                        fq_unsubscribe_target_t *target)
{
    memset(target, 0, sizeof *target);
    size_t token_len = token ? strnlen(token, FQ_UNSUBSCRIBE_TOKEN_SIZE) : 0;
    if (token_len == 0 || token_len >= FQ_UNSUBSCRIBE_TOKEN_SIZE || sodium_init() < 0)
        return FQ_EINVAL;
    unsigned char sealed[S_SEALED_MAX], plain[S_PLAIN_MAX];
    size_t sealed_len = 0;
    //  The whole text must decode (no end pointer: trailing bytes fail)
    if (sodium_base642bin(sealed, sizeof sealed, token, token_len, NULL, &sealed_len, NULL,
                          S_BASE64_VARIANT) != 0 ||
        sealed_len < S_SEALED_MIN || sealed[0] != S_VERSION)
        return FQ_EINVAL;
    unsigned long long plain_len = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(
            plain, &plain_len, NULL, sealed + 1 + S_NONCE_SIZE, sealed_len - 1 - S_NONCE_SIZE,
            sealed, 1, sealed + 1, key) != 0)
        return FQ_EINVAL;
    size_t len = (size_t)plain_len - S_IDS_SIZE;
    int64_t tenant = s_get_id(plain), request = s_get_id(plain + S_ID_SIZE);
    //  Sealed by this module, so well formed; checked all the same
    if (tenant <= 0 || request <= 0 || memchr(plain + S_IDS_SIZE, 0, len)) {
        sodium_memzero(plain, sizeof plain);
        return FQ_EINVAL;
    }
    target->tenant_id = tenant;
    target->request_id = request;
    memcpy(target->recipient, plain + S_IDS_SIZE, len);
    target->recipient[len] = '\0';
    sodium_memzero(plain, sizeof plain);
    return 0;
}
