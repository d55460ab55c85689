/*  fq_gateway_cert.c — a new CURVE certificate for either end of the
    gateway (fq_gateway.h): `fairqd --make-cert` and `fairq-sender
    --make-cert` make theirs here, in the format the gateway loads. */
#include "fq_gateway.h"
#include <czmq.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

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
    //  read the secret key
    mode_t previous = umask(077);
    int rc = zcert_save_secret(cert, secret_path);
    umask(previous);
    if (rc == 0)
        rc = zcert_save_public(cert, path);
    zcert_destroy(&cert);
    return rc == 0 ? 0 : -1;
}
