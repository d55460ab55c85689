/*  fq_api_unsubscribe.c — the public one-click unsubscribe pages (RFC
    8058; docs/feedback.md, "One-click unsubscribe"), the only routes of
    fairqd's unsubscribe listener (fq_http.c serves them alone on
    unsubscribe_listen, with headers for a page facing the internet).

    GET /u/TOKEN shows a short page with one button, a form that POSTs to
    the same URL; it changes nothing, because link scanners, previews and
    virus checkers of mail providers follow every GET of a mail. POST
    /u/TOKEN with the body List-Unsubscribe=One-Click (what a mail client
    sends for the List-Unsubscribe-Post field, and what the page's form
    sends) unsubscribes: one transaction of the store
    (fq_store_unsubscribe.h). A token that does not open under this
    fairqd's key (tampered, cut, another secret's) is answered 400 and
    changes nothing; what it was is not said, so a caller learns nothing
    by trying.

    Any fairqd may serve it, leader or standby: it is one transaction of
    the database, and the dispatcher sees the cancelled messages as it
    sees any cancel. Pages are plain HTML, no script and no style, in
    English, and name neither the tenant nor the address.
*/
#include "fq_api_internal.h"
#include "fq_buf.h"
#include "fq_error.h"
#include "fq_log.h"
#include "fq_mail_headers.h"
#include "fq_store_unsubscribe.h"
#include "fq_unsubscribe_token.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_CONTENT_HTML "text/html; charset=utf-8"

//  What a mail client is asked to wait before it posts again, when the
//  database cannot be reached: fairqd reconnects within a second or two
//  of the database's return, and a provider retries on its own schedule.
#define S_RETRY_AFTER "30"

//  The name and value of RFC 8058's one-click pair, as a form gives it.
#define S_ONE_CLICK_NAME  "List-Unsubscribe"
#define S_ONE_CLICK_VALUE "One-Click"

//  Answers status with a short page (title and one paragraph, static
//  text), with a form that posts to the page's own URL when form is true.
static void s_page(fq_api_call_t *call, unsigned status, const char *title, const char *text,
                   bool form)
{
    fq_buf_t page = {0};
    int mem = fq_buf_printf(&page,
                            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                            "<meta name=\"viewport\" content=\"width=device-width\">"
                            "<meta name=\"robots\" content=\"noindex\">"
                            "<title>%s</title></head>\n<body><h1>%s</h1>\n<p>%s</p>\n",
                            title, title, text);
    //  The action is the page's own URL, relative ("TOKEN" under /u/): the
    //  listener need not know the public URL it is reached by, and the
    //  token is base64url (it opened), which an attribute takes as it is
    if (!mem && form)
        mem = fq_buf_printf(&page,
                            "<form method=\"post\" action=\"%s\">"
                            "<input type=\"hidden\" name=\"" S_ONE_CLICK_NAME
                            "\" value=\"" S_ONE_CLICK_VALUE "\">"
                            "<button type=\"submit\">Unsubscribe</button></form>\n",
                            call->params[0]);
    if (!mem)
        mem = fq_buf_add_str(&page, "</body></html>\n");
    json_decref(call->json);
    call->json = NULL;
    free(call->text);
    call->text = mem ? NULL : fq_buf_take(&page);
    fq_buf_free(&page);
    if (!call->text) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    call->status = status;
    call->text_type = S_CONTENT_HTML;
}

//  The page of an error a shared helper answered as JSON (fq_api_store's
//  503, fq_api_fail_store's): a person reads this listener's answers.
static void s_error_page(fq_api_call_t *call)
{
    if (call->status == MHD_HTTP_SERVICE_UNAVAILABLE) {
        snprintf(call->retry_after, sizeof call->retry_after, "%s", S_RETRY_AFTER);
        s_page(call, MHD_HTTP_SERVICE_UNAVAILABLE, "Please try again",
               "The service cannot unsubscribe you right now. Please try again in a minute.",
               false);
    } else
        s_page(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "Something went wrong",
               "The service could not unsubscribe you. Please try again later.", false);
}

//  Opens the call's token into target; false after answering 400.
static bool s_open(fq_api_call_t *call, fq_unsubscribe_target_t *target)
{
    if (fq_unsubscribe_open(call->server->unsubscribe_key, call->params[0], target) == 0)
        return true;
    s_page(call, MHD_HTTP_BAD_REQUEST, "Invalid link",
           "This unsubscribe link is not valid. Please use the link of the message as it came.",
           false);
    return false;
}

//  Whether a form body (name=value pairs joined by '&', URL-encoded)
//  holds the pair name=value exactly.
static bool s_form_has(const char *body, size_t size, const char *pair)
{
    size_t len = strlen(pair);
    for (size_t at = 0; at < size;) {
        const char *amp = memchr(body + at, '&', size - at);
        size_t end = amp ? (size_t)(amp - body) : size;
        if (end - at == len && memcmp(body + at, pair, len) == 0)
            return true;
        at = end + 1;
    }
    return false;
}

//  Whether the body says one-click (RFC 8058 3.2): the pair
//  List-Unsubscribe=One-Click, as application/x-www-form-urlencoded (what
//  mail clients and the page's form send), or as a multipart/form-data
//  part of that name holding that value.
static bool s_one_click(const fq_api_call_t *call)
{
    if (s_form_has(call->body, call->body_size, S_ONE_CLICK_NAME "=" S_ONE_CLICK_VALUE))
        return true;
    const char *part = strstr(call->body, "name=\"" S_ONE_CLICK_NAME "\"");
    const char *blank = part ? strstr(part, "\r\n\r\n") : NULL;
    return blank &&
           strncmp(blank + strlen("\r\n\r\n"), S_ONE_CLICK_VALUE, strlen(S_ONE_CLICK_VALUE)) == 0;
}

void fq_api_unsubscribe_page(fq_api_call_t *call)
{
    //  A query is not checked: trackers and mail clients add their own
    //  (utm_source...), which must not break a link
    fq_unsubscribe_target_t target;
    if (!s_open(call, &target))
        return;
    s_page(call, MHD_HTTP_OK, "Unsubscribe",
           "Unsubscribe from the mail of the sender of this message? You will get none of it "
           "again.",
           true);
}

void fq_api_unsubscribe_post(fq_api_call_t *call)
{
    fq_unsubscribe_target_t target;
    if (!s_open(call, &target))
        return;
    if (!s_one_click(call)) {
        s_page(call, MHD_HTTP_BAD_REQUEST, "Not an unsubscribe",
               "This request does not ask to unsubscribe (List-Unsubscribe=One-Click).", false);
        return;
    }
    call->store = fq_api_store(call);
    if (!call->store) {
        s_error_page(call);
        return;
    }
    fq_unsubscribe_result_t result;
    int rc = fq_store_unsubscribe(call->store, target.tenant_id, target.request_id,
                                  target.recipient, &result);
    //  A connection cut by a restart of the database: once more (the
    //  transaction did not commit, and a second one is idempotent anyway)
    if (rc == FQ_EDB && fq_api_reconnect(call))
        rc = fq_store_unsubscribe(call->store, target.tenant_id, target.request_id,
                                  target.recipient, &result);
    if (rc) {
        fq_api_fail_store(call, rc);
        s_error_page(call);
        return;
    }
    if (!result.known) {
        s_page(call, MHD_HTTP_GONE, "Link expired",
               "The sender of this message is no longer served here: it sends you nothing more.",
               false);
        return;
    }
    //  Tenant and request ids only: the address stays out of the log
    fq_log(FQ_LOG_INFO, "unsubscribe: tenant %lld, request %lld: %s, %d messages cancelled",
           (long long)target.tenant_id, (long long)target.request_id,
           result.suppressed ? "suppressed" : "suppressed already", result.cancelled);
    s_page(call, MHD_HTTP_OK, "Unsubscribed",
           "You are unsubscribed: the sender of this message will send you no more mail through "
           "this service.",
           false);
}
