/*  fq_transport_http.h — the http kind of fq_transport, private to sender/.

    One HTTP(S) request per message: to the message's URL (its to), with
    its method (POST when none), its headers as given and its body. fairqd
    computed the headers, Content-Type and any signature among them; the
    sender never signs. The answer decides:

    * 2xx: delivered;
    * 408, 425, 429, 5xx, and no answer at all (the connection failed or
      timed out, TLS failed): transient, with the wait the Retry-After
      header asked for (seconds or an HTTP-date, at most
      FQ_TRANSPORT_RETRY_AFTER_MAX_S). Of these, 429, and 503 with a
      Retry-After header, are THROTTLED (the receiver paces us); no
      connection made (the host's name not resolved, the connection
      refused, the connect timeout) is UNREACHABLE
      (fq_transport_curl_failure); the rest, TLS failures among them,
      TRANSIENT;
    * 3xx: permanent ("HTTP 301: redirect not followed"): redirects are
      never followed, as the receiver's URL is the tenant's to give;
    * any other status: permanent;
    * a message no request could carry (its URL is not http:// or
      https://, an unknown method, a header with a CR, LF or another
      control, a name that is no token, a Content-Length or
      Transfer-Encoding of its own): permanent, before any connection.

    The error is "HTTP <status>: <the start of the response's body>" (its
    reason phrase when the body is empty), or libcurl's reason when no
    answer came.

    The transport owns one libcurl handle, whose connections stay open
    between requests: the next message to the same host reuses one (keep
    alive), without a new TCP or TLS handshake. Each delivery worker has
    its own transport, and so its own connections.
*/
#ifndef FQ_TRANSPORT_HTTP_H
#define FQ_TRANSPORT_HTTP_H

#include "fq_transport.h"

typedef struct fq_http fq_http_t;

//  An HTTP client for cfg (kind "http"): timeout_ms, connect_timeout_ms,
//  ca_file (which must be readable), insecure_tls. Connects only at the
//  first delivery. NULL with the reason in error.
fq_http_t *fq_http_new(const fq_transport_config_t *cfg, char *error, size_t error_size);

//  Closes the connections and frees; safe on NULL, nulls *self_p.
void fq_http_destroy(fq_http_t **self_p);

//  Sends msg's request and classifies the answer (above); *retry_after_s
//  is the Retry-After of a transient (or throttled) answer, 0 for none.
fq_delivery_result_t fq_http_send(fq_http_t *self, const fq_delivery_t *msg,
                                  uint32_t *retry_after_s, char *error, size_t error_size);

//  How an answer of status counts (above); retry_after: it had a
//  Retry-After header, whatever its value.
fq_delivery_result_t fq_http_classify(long status, bool retry_after);

#endif
