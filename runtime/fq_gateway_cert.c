/*  fq_gateway_cert.c — a new CURVE certificate for either end of the
    gateway (fq_gateway.h): `fairqd --make-cert` and `fairq-sender
    --make-cert` make theirs here, in the format the gateway loads. */
#include "fq_gateway.h"
#include <czmq.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  The secret half's file: PATH with this appended (as zcert_load reads it)
#define S_SECRET_SUFFIX "_secret"

int fq_gateway_cert_make(const char *path)
{
    char secret_path[PATH_MAX];
    int n = snprintf(secret_path, sizeof secret_path, "%s" S_SECRET_SUFFIX, path);
    if (n < 0 || (size_t)n >= sizeof secret_path)
        return -1;
    zcert_t *cert = zcert_new();
    if (!cert)
        return -1;
    //  The secret file readable by its owner only: zcert_save leaves modes
    //  to the umask, and the usual 022 would let every user of the host
    //  read the secret key. An old file at the path keeps its mode when it
    //  is written over, so it goes first
    if (unlink(secret_path) != 0 && errno != ENOENT) {
        zcert_destroy(&cert);
        return -1;
    }
    mode_t previous = umask(077);
    int rc = zcert_save_secret(cert, secret_path);
    umask(previous);
    if (rc == 0)
        rc = zcert_save_public(cert, path);
    zcert_destroy(&cert);
    return rc == 0 ? 0 : -1;
}

int fq_gateway_cert_command(const char *program, const char *path)
{
    if (fq_gateway_cert_make(path) != 0) {
        fprintf(stderr, "%s: could not write certificate \"%s\": %s\n", program, path,
                strerror(errno));
        return 1;
    }
    printf("wrote %s (public) and %s" S_SECRET_SUFFIX " (keep it private)\n", path, path);
    return 0;
}
