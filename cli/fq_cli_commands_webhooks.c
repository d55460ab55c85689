/*  fq_cli_commands_webhooks.c — webhooks (list, add, show, set, rotate,
    remove): a tenant's endpoints that get its events in signed batches
    (api/API.md, "Webhooks"; docs/feedback.md, "Webhooks").

    Every command names its tenant with --tenant NAME: the API names the
    tenant in its paths, and a token does not say which tenant it is for,
    so it is not guessed. What the API refuses in any case is checked here
    first (an id that is no positive integer, an event type not in the
    list, a URL that is not http:// or https://, a --keep-previous-s out
    of its range); the API holds the whole rule (a URL's host and port, a
    secret's form) and says what is wrong with the rest.

    The endpoint's URL is --endpoint URL, not --url: --url is the global
    option that says where fairqd's API is, taken after the command too.
*/
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_table.h"
#include "fq_feedback_names.h"
#include "fq_limits.h"
#include "fq_utf8.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  API.md: a rotated secret keeps signing 0..604800 seconds (a week)
#define S_KEEP_PREVIOUS_S_MAX (7 * 86400)

//  The word of --events for every type (the API's null)
#define S_ALL "all"

//  What separates the types of --events
#define S_TYPE_SEPARATORS ","

//  The schemes of an endpoint's URL (API.md: an http request's rule)
#define S_HTTP_SCHEME  "http://"
#define S_HTTPS_SCHEME "https://"

//  Characters of LAST ERROR in the list: an endpoint's answer may be long,
//  and the table stays readable; "webhooks show" shows it whole
#define S_ERROR_WIDTH 40

//  What ends a shortened cell, and the characters it takes
#define S_ELLIPSIS       "..."
#define S_ELLIPSIS_WIDTH 3

//  Room for an endpoint's path: the longest tenant name, an id, the rest
#define S_PATH_SIZE (FQ_TENANT_NAME_SIZE + 64)

//  The option every command has: which tenant's endpoints
#define S_TENANT_OPTION                                                                            \
    {                                                                                              \
        "tenant", "NAME", "the tenant whose endpoints (required)"                                  \
    }

#define S_EVENTS_HELP                                                                              \
    "the event types it gets, between commas (message.dead,message.bounced), or all "              \
    "(every type)"

static const fq_cli_option_t s_tenant_options[] = {S_TENANT_OPTION, {NULL, NULL, NULL}};

static const fq_cli_option_t s_add_options[] = {
    S_TENANT_OPTION,
    {"events", "LIST|all", S_EVENTS_HELP " (default all)"},
    {"secret", "SECRET",
     "the signing secret, whsec_ and the base64 of 24 to 64 bytes (default: fairq makes one)"},
    {NULL, NULL, NULL}};

static const fq_cli_option_t s_set_options[] = {
    S_TENANT_OPTION,
    {"endpoint", "URL", "its new URL, http:// or https://"},
    {"events", "LIST|all", S_EVENTS_HELP},
    {"enable", NULL, "deliver to it again, its failures forgotten (it gets what it missed)"},
    {"disable", NULL, "deliver nothing to it until enabled; its place in the events is kept"},
    {NULL, NULL, NULL}};

static const fq_cli_option_t s_rotate_options[] = {
    S_TENANT_OPTION,
    {"secret", "SECRET",
     "the new secret, whsec_ and the base64 of 24 to 64 bytes (default: "
     "fairq makes one)"},
    {"keep-previous-s", "N",
     "seconds the old secret still signs beside the new one (0..604800, default 86400)"},
    {NULL, NULL, NULL}};

//  ---------------------------------------------------------------------
//  The tenant, and the checks of arguments

//  The tenant the options name, and the path of its endpoints
//  ("/v1/tenants/NAME/webhooks") into path (size bytes). Returns 0 or
//  FQ_CLI_EXIT_USAGE (printed).
static int s_tenant(const fq_cli_args_t *args, const char **tenant, char *path, size_t size)
{
    return fq_cli_tenant_path(args, "webhooks", tenant, path, size);
}

//  The tenant and the endpoint's id (the first positional argument), and
//  the endpoint's path with suffix ("" or "/rotate"). Returns 0 or
//  FQ_CLI_EXIT_USAGE (printed).
static int s_endpoint(const fq_cli_args_t *args, const char **tenant, int64_t *id,
                      const char *suffix, char *path, size_t size)
{
    char base[S_PATH_SIZE];
    if (fq_cli_parse_id(args->pos[0], "webhook id", id) ||
        s_tenant(args, tenant, base, sizeof base))
        return FQ_CLI_EXIT_USAGE;
    //  A tenant's name and an id always fit: a path cut short is a bug
    if (snprintf(path, size, "%s/%lld%s", base, (long long)*id, suffix) >= (int)size) {
        fq_cli_error("webhook path too long");
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

//  An endpoint's URL as far as it is checked here: http:// or https://
//  and something after it. Returns 0 or FQ_CLI_EXIT_USAGE (printed).
static int s_parse_url(const char *text)
{
    size_t http = strlen(S_HTTP_SCHEME), https = strlen(S_HTTPS_SCHEME);
    bool ok = (strncmp(text, S_HTTP_SCHEME, http) == 0 && text[http]) ||
              (strncmp(text, S_HTTPS_SCHEME, https) == 0 && text[https]);
    if (!ok) {
        char shown[FQ_CLI_VALUE_SIZE];
        fq_cli_escape(shown, sizeof shown, text);
        fq_cli_error("invalid URL \"%s\" (the endpoint's http:// or https:// URL, with its host)",
                     shown);
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

//  --events LIST|all into *value (new reference): null for "all", else an
//  array of the types, each one of fq_event_types. Returns 0 or
//  FQ_CLI_EXIT_USAGE (printed); FQ_CLI_EXIT_FAILED when out of memory.
static int s_parse_events(const char *text, json_t **value)
{
    *value = strcmp(text, S_ALL) == 0 ? json_null() : json_array();
    if (json_is_null(*value))
        return 0;
    char *copy = strdup(text);
    if (!*value || !copy) {
        json_decref(*value);
        free(copy);
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    //  strtok_r would skip an empty item ("a,,b", a trailing comma): each
    //  item is read between separators, so that an empty one is refused
    const char *bad = NULL;
    int rc = 0;
    for (char *item = copy, *end; item && !bad && !rc; item = end ? end + 1 : NULL) {
        end = strpbrk(item, S_TYPE_SEPARATORS);
        if (end)
            *end = '\0';
        if (!fq_event_type(item))
            bad = item;
        else if (json_array_append_new(*value, json_string(item)) != 0) {
            fq_cli_error("out of memory");
            rc = FQ_CLI_EXIT_FAILED;
        }
    }
    if (bad) {
        char shown[FQ_CLI_VALUE_SIZE];
        fq_cli_escape(shown, sizeof shown, bad);
        fq_cli_error("invalid value for --events: \"%s\" (all, or event types between commas, "
                     "each one of " FQ_EVENT_TYPES_TEXT ")",
                     shown);
        rc = FQ_CLI_EXIT_USAGE;
    }
    free(copy);
    if (rc) {
        json_decref(*value);
        *value = NULL;
    }
    return rc;
}

//  ---------------------------------------------------------------------
//  An endpoint for people

//  The types it gets: "all" for null, else "a,b" (the API's names). The
//  caller frees; NULL when out of memory.
static char *s_join_events(const json_t *events)
{
    fq_buf_t text = {0};
    int rc = 0;
    if (!json_is_array(events))
        rc |= fq_buf_add_str(&text, S_ALL);
    size_t i;
    const json_t *type;
    json_array_foreach(events, i, type)
    {
        if (i)
            rc |= fq_buf_add_char(&text, ',');
        rc |= fq_buf_add_str(&text, json_string_value(type) ? json_string_value(type) : "");
    }
    if (rc) {
        fq_buf_free(&text);
        return NULL;
    }
    return fq_buf_take(&text);
}

//  The backlog: "125", or "10000+" when the API counted no further.
static void s_format_backlog(char *text, size_t size, const json_t *webhook)
{
    fq_cli_format_value(text, size, json_object_get(webhook, "backlog"));
    if (json_is_true(json_object_get(webhook, "backlog_more")) && strlen(text) + 1 < size)
        strcat(text, "+");
}

//  The batch in flight: "request 812, 100 events", or "-".
static void s_format_batch(char *text, size_t size, const json_t *batch)
{
    if (json_is_object(batch))
        snprintf(text, size, "request %lld, %lld events",
                 (long long)json_integer_value(json_object_get(batch, "request")),
                 (long long)json_integer_value(json_object_get(batch, "events")));
    else
        snprintf(text, size, "-");
}

//  value for people, cut to width characters (UTF-8 sequences count one)
//  with "..." at the end when longer.
static void s_format_short(char *text, size_t size, const json_t *value, size_t width)
{
    fq_cli_format_value(text, size, value);
    if (fq_cli_width(text) <= width)
        return;
    //  The text is escaped: well-formed UTF-8, a sequence per character
    size_t left = strlen(text), o = 0;
    for (size_t shown = 0; shown < width - S_ELLIPSIS_WIDTH && o < left; shown++) {
        size_t length = fq_utf8_sequence(text + o, left - o);
        o += length ? length : 1;
    }
    if (o + sizeof S_ELLIPSIS <= size)
        memcpy(text + o, S_ELLIPSIS, sizeof S_ELLIPSIS);
}

static void s_print_webhook(const json_t *webhook)
{
    static const char *const fields[] = {"webhook",
                                         "id",
                                         "url",
                                         "url",
                                         "events",
                                         "events",
                                         "enabled",
                                         "enabled",
                                         "state",
                                         "state",
                                         "disabled reason",
                                         "disabled_reason",
                                         "secret",
                                         "secret",
                                         "previous secret until",
                                         "previous_secret_until",
                                         "delivered",
                                         "delivered",
                                         "backlog",
                                         "backlog",
                                         "batch in flight",
                                         "batch",
                                         "failures",
                                         "failures",
                                         "failing since",
                                         "failing_since",
                                         "last error",
                                         "last_error",
                                         "last error at",
                                         "last_error_at",
                                         "last success at",
                                         "last_success_at",
                                         "next attempt at",
                                         "next_attempt_at",
                                         "created",
                                         "created_at",
                                         NULL};
    //  A copy with the values written for people under their keys
    json_t *shown = json_copy((json_t *)webhook);
    char *events = s_join_events(json_object_get(webhook, "events"));
    if (!shown || !events) {
        fq_cli_error("out of memory");
        json_decref(shown);
        free(events);
        return;
    }
    char text[FQ_CLI_VALUE_SIZE];
    json_object_set_new(shown, "events", json_string(events));
    s_format_backlog(text, sizeof text, webhook);
    json_object_set_new(shown, "backlog", json_string(text));
    s_format_batch(text, sizeof text, json_object_get(webhook, "batch"));
    json_object_set_new(shown, "batch", json_string(text));
    fq_cli_print_fields(stdout, shown, fields);
    json_decref(shown);
    free(events);
}

//  "secret: whsec_...", and on stderr why it matters.
static void s_print_secret(const json_t *webhook, const char *tenant)
{
    char secret[FQ_CLI_VALUE_SIZE];
    fq_cli_format_value(secret, sizeof secret, json_object_get(webhook, "secret"));
    printf("secret: %s\n", secret);
    fprintf(stderr,
            "(the endpoint needs this secret to verify fairq's signatures; \"fairq webhooks "
            "show %lld --tenant %s\" shows it again)\n",
            (long long)json_integer_value(json_object_get(webhook, "id")), tenant);
}

//  ---------------------------------------------------------------------
//  webhooks, webhooks list

static void s_add_row(fq_cli_table_t *table, const json_t *webhook)
{
    char text[FQ_CLI_VALUE_SIZE];
    fq_cli_table_add_json(table, json_object_get(webhook, "id"));
    fq_cli_table_add_json(table, json_object_get(webhook, "state"));
    fq_cli_table_add_json(table, json_object_get(webhook, "delivered"));
    s_format_backlog(text, sizeof text, webhook);
    fq_cli_table_add(table, text);
    char *events = s_join_events(json_object_get(webhook, "events"));
    fq_cli_table_add(table, events ? events : "?");
    free(events);
    fq_cli_table_add_json(table, json_object_get(webhook, "url"));
    s_format_short(text, sizeof text, json_object_get(webhook, "last_error"), S_ERROR_WIDTH);
    fq_cli_table_add(table, text);
}

static int s_webhooks(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant;
    char path[S_PATH_SIZE];
    if (s_tenant(args, &tenant, path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
    const json_t *rows = json_object_get(answer.json, "webhooks");
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK && json_array_size(rows) == 0)
        fprintf(stderr,
                "tenant %s has no webhook endpoint (\"fairq webhooks add URL --tenant "
                "%s\" adds one)\n",
                tenant, tenant);
    else if (rc == FQ_CLI_EXIT_OK) {
        static const char *const headers[] = {"ID",     "STATE", "DELIVERED", "BACKLOG",
                                              "EVENTS", "URL",   "LAST ERROR"};
        fq_cli_table_t *table = fq_cli_table_new(headers, "rlrrlll");
        size_t i;
        const json_t *webhook;
        json_array_foreach(rows, i, webhook)
        {
            if (table)
                s_add_row(table, webhook);
        }
        if (table)
            fq_cli_table_print(table, stdout, SIZE_MAX, "\n");
        else {
            fq_cli_error("out of memory");
            rc = FQ_CLI_EXIT_FAILED;
        }
        fq_cli_table_destroy(&table);
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

#define S_LIST_DESCRIPTION                                                                         \
    "One line per endpoint, in id order: its state (ok; failing: its last batch was not\n"         \
    "delivered; disabled: by its tenant, or by fairqd after failing too long), the events\n"       \
    "delivered to it, its backlog (+: more than counted), the event types it gets and\n"           \
    "its last error. \"fairq webhooks show ID\" tells the rest. A tenant's token manages\n"        \
    "its own tenant's endpoints; an admin token any tenant's."

const fq_cli_command_t fq_cli_cmd_webhooks = {
    .name = "webhooks",
    .usage = "--tenant NAME",
    .summary = "a tenant's webhook endpoints, which get its events as they happen",
    .description = S_LIST_DESCRIPTION,
    .options = s_tenant_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_webhooks};

const fq_cli_command_t fq_cli_cmd_webhooks_list = {
    .name = "webhooks list",
    .usage = "--tenant NAME",
    .summary = "a tenant's webhook endpoints, their state and backlog",
    .description = S_LIST_DESCRIPTION,
    .options = s_tenant_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_webhooks};

//  ---------------------------------------------------------------------
//  webhooks add

static int s_webhooks_add(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant, *events_text = fq_cli_arg(args, "events");
    const char *secret = fq_cli_arg(args, "secret");
    char path[S_PATH_SIZE];
    if (s_parse_url(args->pos[0]) || s_tenant(args, &tenant, path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    json_t *events = NULL;
    int rc = events_text ? s_parse_events(events_text, &events) : 0;
    if (rc)
        return rc;
    json_t *body =
        json_pack("{s:s, s:o}", "url", args->pos[0], "events", events ? events : json_null());
    if (body && secret && json_object_set_new(body, "secret", json_string(secret)) != 0) {
        json_decref(body);
        body = NULL;
    }
    if (!body) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    rc = fq_cli_call(cli, "POST", path, body, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        printf("webhook %lld added for tenant %s\n",
               (long long)json_integer_value(json_object_get(answer.json, "id")), tenant);
        s_print_secret(answer.json, tenant);
    }
    fq_cli_answer_reset(&answer);
    json_decref(body);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_webhooks_add = {
    .name = "webhooks add",
    .usage = "URL --tenant NAME [--events LIST|all] [--secret SECRET]",
    .summary = "register an endpoint that gets the tenant's events",
    .description =
        "Batches of events are POSTed to URL, signed as Standard Webhooks signs: the secret\n"
        "printed (yours, or one fairq makes) is what the endpoint verifies them with. A\n"
        "tenant has at most 16 endpoints. With --json, the endpoint as the API answers it.",
    .options = s_add_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_webhooks_add};

//  ---------------------------------------------------------------------
//  webhooks show

static int s_webhooks_show(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant;
    int64_t id;
    char path[S_PATH_SIZE];
    if (s_endpoint(args, &tenant, &id, "", path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK)
        s_print_webhook(answer.json);
    fq_cli_answer_reset(&answer);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_webhooks_show = {
    .name = "webhooks show",
    .usage = "ID --tenant NAME",
    .summary = "one endpoint: its secret, state, last error, batch in flight and backlog",
    .description =
        "A failing endpoint is retried with back-off (no batch before \"next attempt at\");\n"
        "one that fails longer than fairqd's webhook_disable_after_s (three days by default)\n"
        "is disabled, and \"disabled reason\" says since when.",
    .options = s_tenant_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_webhooks_show};

//  ---------------------------------------------------------------------
//  webhooks set

//  The body of the PATCH: only what the options name. NULL after printing
//  why; *rc is then the exit code.
static json_t *s_set_body(const fq_cli_args_t *args, int *rc)
{
    const char *url = fq_cli_arg(args, "endpoint"), *events_text = fq_cli_arg(args, "events");
    bool enable = fq_cli_flag(args, "enable"), disable = fq_cli_flag(args, "disable");
    *rc = FQ_CLI_EXIT_USAGE;
    if (enable && disable) {
        fq_cli_error("--enable and --disable cannot go together");
        return NULL;
    }
    if (!url && !events_text && !enable && !disable) {
        //  --url URL, the global option, says where fairqd is: a user who
        //  meant the endpoint's is told so
        fq_cli_error("nothing to change: give --endpoint URL, --events LIST|all, --enable or "
                     "--disable%s",
                     fq_cli_flag(args, "url") ? " (--url URL is fairqd's API; the endpoint's "
                                                "URL is --endpoint URL)"
                                              : "");
        return NULL;
    }
    if (url && s_parse_url(url))
        return NULL;
    json_t *events = NULL;
    if (events_text && (*rc = s_parse_events(events_text, &events)) != 0)
        return NULL;
    json_t *body = json_object();
    int failed = !body;
    if (body && url)
        failed |= json_object_set_new(body, "url", json_string(url));
    if (body && events)
        failed |= json_object_set_new(body, "events", events);
    else
        json_decref(events);
    if (body && (enable || disable))
        failed |= json_object_set_new(body, "enabled", json_boolean(enable));
    if (failed) {
        json_decref(body);
        fq_cli_error("out of memory");
        *rc = FQ_CLI_EXIT_FAILED;
        return NULL;
    }
    *rc = FQ_CLI_EXIT_OK;
    return body;
}

static int s_webhooks_set(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant;
    int64_t id;
    char path[S_PATH_SIZE];
    if (s_endpoint(args, &tenant, &id, "", path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    int rc;
    json_t *body = s_set_body(args, &rc);
    if (!body)
        return rc;
    fq_cli_answer_t answer = {0};
    rc = fq_cli_call(cli, "PATCH", path, body, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        printf("webhook %lld updated\n", (long long)id);
        s_print_webhook(answer.json);
    }
    fq_cli_answer_reset(&answer);
    json_decref(body);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_webhooks_set = {
    .name = "webhooks set",
    .usage = "ID --tenant NAME [--endpoint URL] [--events LIST|all] [--enable | --disable]",
    .summary = "change an endpoint's URL or event types, or enable or disable it",
    .description =
        "Options left out keep their value; one at least is needed. An endpoint enabled again\n"
        "forgets its failures and gets every event it missed (as long as fairqd keeps\n"
        "events). The endpoint's URL is --endpoint URL: --url URL is fairqd's API.",
    .options = s_set_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_webhooks_set};

//  ---------------------------------------------------------------------
//  webhooks rotate

static int s_webhooks_rotate(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant, *secret = fq_cli_arg(args, "secret");
    const char *keep_text = fq_cli_arg(args, "keep-previous-s");
    int64_t id, keep = 0;
    char path[S_PATH_SIZE];
    if (s_endpoint(args, &tenant, &id, "/rotate", path, sizeof path) ||
        (keep_text &&
         fq_cli_parse_int(keep_text, "--keep-previous-s", 0, S_KEEP_PREVIOUS_S_MAX, &keep)))
        return FQ_CLI_EXIT_USAGE;
    json_t *body = json_object();
    int failed = !body;
    if (body && secret)
        failed |= json_object_set_new(body, "secret", json_string(secret));
    if (body && keep_text)
        failed |= json_object_set_new(body, "keep_previous_s", json_integer(keep));
    if (failed) {
        json_decref(body);
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "POST", path, body, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        const json_t *until = json_object_get(answer.json, "previous_secret_until");
        char text[FQ_CLI_VALUE_SIZE];
        fq_cli_format_value(text, sizeof text, until);
        printf("webhook %lld has a new secret\n", (long long)id);
        s_print_secret(answer.json, tenant);
        if (json_is_string(until))
            printf("the old secret still signs beside it until %s\n", text);
        else
            printf("the old secret no longer signs\n");
    }
    fq_cli_answer_reset(&answer);
    json_decref(body);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_webhooks_rotate = {
    .name = "webhooks rotate",
    .usage = "ID --tenant NAME [--secret SECRET] [--keep-previous-s N]",
    .summary = "give an endpoint a new signing secret, the old one signing a while more",
    .description =
        "Until the time printed, each batch carries two signatures, by the new secret and\n"
        "by the old one, so that the endpoint can move to the new secret in its own time\n"
        "(--keep-previous-s 0: the old one stops now).",
    .options = s_rotate_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_webhooks_rotate};

//  ---------------------------------------------------------------------
//  webhooks remove

static int s_webhooks_remove(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant;
    int64_t id;
    char path[S_PATH_SIZE];
    if (s_endpoint(args, &tenant, &id, "", path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_answer_t answer = {0};
    //  204, no body: fq_cli_call takes it as done
    int rc = fq_cli_call(cli, "DELETE", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && !cli->json)
        printf("webhook %lld removed\n", (long long)id);
    fq_cli_answer_reset(&answer);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_webhooks_remove = {
    .name = "webhooks remove",
    .usage = "ID --tenant NAME",
    .summary = "remove an endpoint; its batch in flight is cancelled",
    .description = "Exit 3 when the tenant has no such endpoint. With --json nothing is printed:\n"
                   "the exit code says it.",
    .options = s_tenant_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_webhooks_remove};
