/*  fq_api_console.c — GET /console: the web console's files
    (console/fq_console.h; what it shows and how: docs/console.md).

    The files are public, as a sign-in page is: they hold no data, and the
    console fetches everything it shows from the API with the bearer token
    the user pasted, so no cookie is ever set and no other site can make a
    browser act with the user's rights (CSRF). Each answer carries a
    Content-Security-Policy that lets the page run only the console's own
    scripts and styles, from this fairqd (no inline script, no CDN), talk
    only to this fairqd, and be framed by no one. */
#include "fq_api_internal.h"
#include "fq_console.h"

//  The console's own files and nothing else: 'self' for scripts, styles
//  and API calls; no inline script or style attribute (the scripts set
//  styles through the DOM, which CSP allows); data: images for the icon.
//  Trusted Types with no policy at all: the scripts build the page from
//  nodes and textContent, never from HTML strings, so a browser that
//  knows Trusted Types refuses any innerHTML, eval or script URL outright
//  (a DOM XSS sink a later change might add fails at once, visibly).
static const fq_api_header_t s_console_headers[] = {
    {"Content-Security-Policy",
     "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; "
     "require-trusted-types-for 'script'; trusted-types 'none'"},
    {"X-Frame-Options", "DENY"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    //  The files change with fairqd: a browser asks again each time
    //  rather than run scripts of an older version against a newer API
    {"Cache-Control", "no-cache"},
    {NULL, NULL},
};

//  Answers the file as it is built into fairqd: its bytes are static, so
//  they are handed to libmicrohttpd as they are, with the size the build
//  measured (no copy, no strlen).
static void s_answer_file(fq_api_call_t *call, const char *name)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    const fq_console_file_t *file = fq_console_find(name);
    if (!file) {
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "the console has no file %s", name);
        return;
    }
    json_decref(call->json);
    call->json = NULL;
    call->static_text = file->data;
    call->static_size = file->size;
    call->text_type = file->type;
    call->status = MHD_HTTP_OK;
    call->headers = s_console_headers;
}

void fq_api_console_page(fq_api_call_t *call)
{
    s_answer_file(call, FQ_CONSOLE_INDEX);
}

void fq_api_console_file(fq_api_call_t *call)
{
    s_answer_file(call, call->params[0]);
}
