/*  args_test.c — the checks every argument of fairq goes through before
    anything is sent: ids, numbers in range, times, tenant names,
    idempotency keys; and the escaping of what goes into a URL.

    A check that fails prints "fairq: invalid ..." (to stderr, seen in
    the test log) and returns the usage exit code, 2.
*/
#include "fq_cli_args.h"
#include "fq_cli_http.h"
#include "fq_limits.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  A fixed "now" for relative times: 2023-11-14T22:13:20Z
#define S_NOW 1700000000

static void test_ids(void **state)
{
    (void)state;
    int64_t id = 0;
    assert_int_equal(fq_cli_parse_id("42", "request id", &id), 0);
    assert_int_equal(id, 42);
    assert_int_equal(fq_cli_parse_id("9223372036854775807", "request id", &id), 0);
    assert_int_equal(id, INT64_MAX);
    static const char *const bad[] = {
        "0", "-1", "+1", "abc", "12abc", "1.5", "", " 12", "0x1f", "9223372036854775808", NULL};
    for (size_t i = 0; bad[i]; i++) {
        id = -7;
        assert_int_equal(fq_cli_parse_id(bad[i], "request id", &id), FQ_CLI_EXIT_USAGE);
        assert_int_equal(id, -7); //  Untouched
    }
}

static void test_integers_in_range(void **state)
{
    (void)state;
    int64_t n;
    assert_int_equal(fq_cli_parse_int("-1000", "--priority", -1000, 1000, &n), 0);
    assert_int_equal(n, -1000);
    assert_int_equal(fq_cli_parse_int("1000", "--priority", -1000, 1000, &n), 0);
    assert_int_equal(fq_cli_parse_int("1001", "--priority", -1000, 1000, &n), FQ_CLI_EXIT_USAGE);
    assert_int_equal(fq_cli_parse_int("-1001", "--priority", -1000, 1000, &n), FQ_CLI_EXIT_USAGE);
    assert_int_equal(fq_cli_parse_int("ten", "--weight", 1, 1000, &n), FQ_CLI_EXIT_USAGE);
    assert_int_equal(fq_cli_parse_int("0", "--weight", 1, 1000, &n), FQ_CLI_EXIT_USAGE);
    assert_int_equal(fq_cli_parse_int("", "--limit", 1, 1000, &n), FQ_CLI_EXIT_USAGE);
    assert_int_equal(fq_cli_parse_int("99999999999999999999", "--limit", 1, 1000, &n),
                     FQ_CLI_EXIT_USAGE);
}

static void test_seconds(void **state)
{
    (void)state;
    double s;
    assert_int_equal(fq_cli_parse_seconds("0.5", "--interval-s", 0.1, 3600, &s), 0);
    assert_true(s == 0.5);
    assert_int_equal(fq_cli_parse_seconds("2", "--interval-s", 0.1, 3600, &s), 0);
    static const char *const bad[] = {"0", "0.01", "3601", "nan", "inf", "1s", "", "-1", NULL};
    for (size_t i = 0; bad[i]; i++)
        assert_int_equal(fq_cli_parse_seconds(bad[i], "--interval-s", 0.1, 3600, &s),
                         FQ_CLI_EXIT_USAGE);
}

static void test_rfc3339(void **state)
{
    (void)state;
    static const char *const good[] = {
        "2026-11-21T12:00:00Z",      "2026-11-21t12:00:00z",     "2026-11-21T12:00:00+02:00",
        "2026-11-21T12:00:00-05:30", "2026-11-21T12:00:00.123Z", "2024-02-29T00:00:00Z",
        "2016-12-31T23:59:60Z",      "2026-11-21 12:00:00Z",     NULL};
    for (size_t i = 0; good[i]; i++)
        assert_true(fq_cli_rfc3339_valid(good[i]));
    static const char *const bad[] = {"2026-11-21T12:00:00",
                                      "2026-11-21",
                                      "2026-13-01T00:00:00Z",
                                      "2026-02-29T00:00:00Z",
                                      "2026-04-31T00:00:00Z",
                                      "2026-11-21T24:00:00Z",
                                      "2026-11-21T12:60:00Z",
                                      "2026-11-21T12:00:00.Z",
                                      "2026-11-21T12:00:00+0200",
                                      "2026-11-21T12:00:00Zjunk",
                                      "26-11-21T12:00:00Z",
                                      "tomorrow",
                                      "",
                                      NULL};
    for (size_t i = 0; bad[i]; i++)
        if (fq_cli_rfc3339_valid(bad[i]))
            fail_msg("took \"%s\" for an RFC 3339 time", bad[i]);
}

static void test_times(void **state)
{
    (void)state;
    json_t *value = NULL;
    assert_int_equal(fq_cli_parse_time("2026-11-21T12:00:00Z", "--send-at", S_NOW, &value), 0);
    assert_string_equal(json_string_value(value), "2026-11-21T12:00:00Z"); //  As it is
    json_decref(value);
    assert_int_equal(fq_cli_parse_time("1800000000", "--send-at", S_NOW, &value), 0);
    assert_int_equal(json_integer_value(value), 1800000000);
    json_decref(value);
    static const struct {
        const char *text;
        int64_t seconds;
    } relative[] = {{"+30s", 30}, {"+5m", 300}, {"+2h", 7200}, {"+1d", 86400}, {"+0s", 0}};
    for (size_t i = 0; i < sizeof relative / sizeof *relative; i++) {
        assert_int_equal(fq_cli_parse_time(relative[i].text, "--send-at", S_NOW, &value), 0);
        assert_int_equal(json_integer_value(value), S_NOW + relative[i].seconds);
        json_decref(value);
    }
    static const char *const bad[] = {
        "+5", "+5w", "+m", "-5m", "+5mm", "soon", "+99999999999999d", "", "2026-11-21", NULL};
    for (size_t i = 0; bad[i]; i++) {
        assert_int_equal(fq_cli_parse_time(bad[i], "--send-at", S_NOW, &value), FQ_CLI_EXIT_USAGE);
        assert_null(value);
    }
}

static void test_durations(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t seconds;
    } good[] = {{"0", 0}, {"90", 90}, {"90s", 90}, {"90m", 5400}, {"2h", 7200}, {"3d", 259200}};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        int64_t seconds = -1;
        assert_int_equal(fq_cli_parse_duration(good[i].text, "--older-than", &seconds), 0);
        assert_int_equal(seconds, good[i].seconds);
    }
    static const char *const bad[] = {"",  "-1",   "+5m", "5w",           "5mm",
                                      "h", "1.5h", " 5",  "99999999999d", NULL};
    for (size_t i = 0; bad[i]; i++) {
        int64_t seconds = -1;
        assert_int_equal(fq_cli_parse_duration(bad[i], "--older-than", &seconds),
                         FQ_CLI_EXIT_USAGE);
        assert_int_equal(seconds, -1);
    }
}

static void test_tenant_names(void **state)
{
    (void)state;
    static const char *const good[] = {"acme", "0day", "a.b_c-d", "x", NULL};
    for (size_t i = 0; good[i]; i++)
        assert_int_equal(fq_cli_parse_tenant(good[i], "tenant"), 0);
    //  The longest name, and one byte more
    char longest[FQ_TENANT_NAME_SIZE], too_long[FQ_TENANT_NAME_SIZE + 1];
    memset(longest, 'a', FQ_TENANT_NAME_MAX);
    longest[FQ_TENANT_NAME_MAX] = 0;
    memset(too_long, 'a', FQ_TENANT_NAME_MAX + 1);
    too_long[FQ_TENANT_NAME_MAX + 1] = 0;
    assert_int_equal(fq_cli_parse_tenant(longest, "tenant"), 0);
    static const char *const bad[] = {"",      "Acme",   "-acme",     ".acme",
                                      "ac me", "acme/x", "a\xC3\xA9", NULL};
    for (size_t i = 0; bad[i]; i++)
        assert_int_equal(fq_cli_parse_tenant(bad[i], "tenant"), FQ_CLI_EXIT_USAGE);
    assert_int_equal(fq_cli_parse_tenant(too_long, "tenant"), FQ_CLI_EXIT_USAGE);
}

static void test_choices_and_keys(void **state)
{
    (void)state;
    static const char *const statuses[] = {"pending", "sent", "dead", NULL};
    assert_int_equal(fq_cli_parse_choice("sent", "--status", statuses), 0);
    assert_int_equal(fq_cli_parse_choice("Sent", "--status", statuses), FQ_CLI_EXIT_USAGE);
    assert_int_equal(fq_cli_parse_choice("", "--status", statuses), FQ_CLI_EXIT_USAGE);

    assert_int_equal(fq_cli_parse_idempotency_key("order-42 2026/11"), 0);
    char key[257];
    memset(key, 'k', sizeof key - 1);
    key[255] = 0;
    assert_int_equal(fq_cli_parse_idempotency_key(key), 0);
    key[255] = 'k';
    key[256] = 0;
    assert_int_equal(fq_cli_parse_idempotency_key(key), FQ_CLI_EXIT_USAGE);
    assert_int_equal(fq_cli_parse_idempotency_key(""), FQ_CLI_EXIT_USAGE);
    //  A line break would end the header and start another one
    assert_int_equal(fq_cli_parse_idempotency_key("a\r\nX-Evil: 1"), FQ_CLI_EXIT_USAGE);
}

//  Flags are spelled with dashes; the same flag with underscores, as the
//  API spells its fields (max_inflight), is taken as that option
static void test_flags_with_underscores(void **state)
{
    (void)state;
    static const fq_cli_option_t global[] = {
        {"timeout-s", "N", "seconds"}, {"json", NULL, "switch"}, {NULL, NULL, NULL}};
    static const fq_cli_option_t command[] = {{"max-inflight", "N", "most in flight"},
                                              {"submit-rate", "N|none", "per minute"},
                                              {"weight", "N", "share"},
                                              {NULL, NULL, NULL}};
    char *argv[] = {"set",
                    "acme",
                    "--max_inflight",
                    "50",
                    "--submit-rate",
                    "none",
                    "--timeout_s",
                    "7",
                    "--json",
                    "--weight",
                    "3",
                    NULL};
    fq_cli_args_t args = {.tables = {global, command}, .ntables = 2};
    assert_int_equal(fq_cli_args_parse(&args, 11, argv, false, NULL, "fairq tenants set"), 0);
    assert_string_equal(fq_cli_arg(&args, "max-inflight"), "50");
    assert_string_equal(fq_cli_arg(&args, "submit-rate"), "none");
    assert_string_equal(fq_cli_arg(&args, "timeout-s"), "7");
    assert_string_equal(fq_cli_arg(&args, "weight"), "3");
    assert_true(fq_cli_flag(&args, "json"));
    assert_int_equal(args.npos, 1);
    assert_string_equal(args.pos[0], "acme");
    //  Only as a flag: an underscore elsewhere is still an unknown option
    char *bad[] = {"set", "--wei_ght", "3", NULL};
    fq_cli_args_t other = {.tables = {global, command}, .ntables = 2};
    assert_int_equal(fq_cli_args_parse(&other, 3, bad, false, NULL, "fairq tenants set"),
                     FQ_CLI_EXIT_USAGE);
}

static void test_url_escape(void **state)
{
    (void)state;
    char *escaped = fq_cli_url_escape("ann+x@example.org/?&=#% é~._-");
    assert_string_equal(escaped, "ann%2Bx%40example.org%2F%3F%26%3D%23%25%20%C3%A9~._-");
    free(escaped);

    char *path = strdup("/v1/messages");
    assert_int_equal(fq_cli_url_add_query(&path, "to", "a&b@example.org"), 0);
    assert_int_equal(fq_cli_url_add_query(&path, "limit", "10"), 0);
    assert_string_equal(path, "/v1/messages?to=a%26b%40example.org&limit=10");
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_integers_in_range),
        cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_tenant_names),
        cmocka_unit_test(test_choices_and_keys),
        cmocka_unit_test(test_flags_with_underscores),
        cmocka_unit_test(test_url_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
