/*  transport_exec_test.c — the exec kind: a command per message.

    Each test writes small shell scripts into a fresh directory and runs
    them as the transport's command, with that directory as their
    argument (the command is split on blanks): a script writes down what
    it got (its stdin, its FAIRQ_ environment) there, and ends as the test
    needs (exit 0, 75 or 1, a signal, a stall). The test checks how each
    end is classified and said.

    SIGPIPE is left at its default here, on purpose: a command that does
    not read its input must not end the process that runs it.
*/
#include "fq_transport.h"
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "fq_test_process.h"

//  The stall test: the script sleeps S_STALL_S (in a child of its own,
//  which the timeout must kill as well), the transport gives up after
//  S_SHORT_TIMEOUT_MS.
#define S_STALL_S          20
#define S_SHORT_TIMEOUT_MS 300
#define S_GONE_WAIT_MS     5000

//  The large input: more than a pipe holds (64 KiB), so that the
//  transport must feed it while the command reads.
#define S_LARGE_INPUT (1024 * 1024)

//  What a chatty script writes to stderr before reading its input: more
//  than a pipe holds, so that the transport must read while it feeds.
#define S_CHATTER_BYTES 200000

#define S_DIR_SIZE   64
#define S_PATH_SIZE  512
#define S_TEXT_SIZE  8192
#define S_ERROR_SIZE FQ_TRANSPORT_ERROR_SIZE

typedef struct {
    char dir[S_DIR_SIZE];
} s_dir_t;

static int s_setup(void **state)
{
    s_dir_t *dir = calloc(1, sizeof *dir);
    assert_non_null(dir);
    snprintf(dir->dir, sizeof dir->dir, "/tmp/fq_exec_test.XXXXXX");
    assert_non_null(mkdtemp(dir->dir));
    *state = dir;
    return 0;
}

static int s_teardown(void **state)
{
    s_dir_t *dir = *state;
    char command[S_PATH_SIZE * 2];
    snprintf(command, sizeof command, "rm -rf '%s'", dir->dir);
    int rc = system(command);
    free(dir);
    return rc == 0 ? 0 : -1;
}

//  Writes an executable script named name into dir, with body after its
//  "#!/bin/sh" line; returns its path (static, until the next call).
static const char *s_script(s_dir_t *dir, const char *name, const char *body)
{
    static char path[S_PATH_SIZE * 2];
    snprintf(path, sizeof path, "%s/%s", dir->dir, name);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fprintf(file, "#!/bin/sh\n%s\n", body);
    assert_int_equal(fclose(file), 0);
    assert_int_equal(chmod(path, 0700), 0);
    return path;
}

//  A transport running script with dir as its argument.
static fq_transport_t *s_exec(s_dir_t *dir, const char *script, int timeout_ms)
{
    char command[S_PATH_SIZE * 3];
    snprintf(command, sizeof command, "%s \t %s", script, dir->dir);
    fq_transport_config_t cfg = {.kind = "exec", .command = command, .timeout_ms = timeout_ms};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    if (!transport)
        fail_msg("exec transport refused: %s", error);
    return transport;
}

//  The content of dir/name, NUL-terminated (static); "" when absent.
static const char *s_read(s_dir_t *dir, const char *name)
{
    static char text[S_TEXT_SIZE];
    char path[S_PATH_SIZE * 2];
    snprintf(path, sizeof path, "%s/%s", dir->dir, name);
    text[0] = 0;
    FILE *file = fopen(path, "r");
    if (!file)
        return text;
    size_t got = fread(text, 1, sizeof text - 1, file);
    text[got] = 0;
    fclose(file);
    return text;
}

static fq_delivery_t s_message(uint64_t id, const char *channel)
{
    return (fq_delivery_t){
        .id = id,
        .tenant = "acme",
        .request_id = 7,
        .attempt = 2,
        .to = "+15551234567",
        .from = "Shop <shop@example.com>",
        .subject = "Your order",
        .body = "Your order has shipped.\n",
        .channel = channel,
    };
}

//  Delivers msg expecting result; returns the error (static).
static const char *s_deliver(fq_transport_t *transport, const fq_delivery_t *msg,
                             fq_delivery_result_t expected)
{
    static char error[S_ERROR_SIZE];
    uint32_t retry = 1;
    fq_delivery_result_t result = fq_transport_deliver(transport, msg, &retry, error, sizeof error);
    if (result != expected)
        fail_msg("delivery: result %d, expected %d (%s)", result, expected, error);
    assert_int_equal(retry, 0);
    if (expected == FQ_DELIVERY_OK)
        assert_string_equal(error, "");
    else
        assert_null(strpbrk(error, "\r\n"));
    return error;
}

// --------------------------------------------------------------------------

//  1. Exit 0 delivers; the command got the body on stdin and the
//  message's particulars in its environment, and none of the sender's
//  own FAIRQ_ variables (its password); message text is never run.
static void test_exec_delivers(void **state)
{
    s_dir_t *dir = *state;
    setenv("FAIRQ_SENDER_SMTP_PASSWORD", "s3cret", 1);
    setenv("FAIRQ_TENANT", "not-this-one", 1);
    const char *script = s_script(dir, "ok.sh",
                                  "cat > \"$1/stdin\"\n"
                                  "env | grep '^FAIRQ_' | LC_ALL=C sort > \"$1/env\"\n"
                                  "exit 0");
    fq_transport_t *transport = s_exec(dir, script, 0);
    unsetenv("FAIRQ_SENDER_SMTP_PASSWORD");
    unsetenv("FAIRQ_TENANT");
    fq_delivery_t msg = s_message(41, "sms");
    char to[S_PATH_SIZE];
    snprintf(to, sizeof to, "$(touch %s/owned);`touch %s/owned`", dir->dir, dir->dir);
    msg.to = to;
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    assert_string_equal(s_read(dir, "stdin"), "Your order has shipped.\n");
    char expected[S_TEXT_SIZE];
    snprintf(expected, sizeof expected,
             "FAIRQ_ATTEMPT=2\nFAIRQ_CHANNEL=sms\nFAIRQ_MESSAGE_ID=41\nFAIRQ_METHOD=\n"
             "FAIRQ_REQUEST_ID=7\nFAIRQ_TENANT=acme\nFAIRQ_TO=%s\n",
             to);
    assert_string_equal(s_read(dir, "env"), expected);
    char owned[S_PATH_SIZE * 2];
    snprintf(owned, sizeof owned, "%s/owned", dir->dir);
    assert_int_equal(access(owned, F_OK), -1);

    //  An HTTP-like message: its method; the transport serves any channel
    msg = s_message(42, "webhook");
    msg.method = "PUT";
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    const char *env = s_read(dir, "env");
    assert_non_null(strstr(env, "FAIRQ_METHOD=PUT\n"));
    assert_non_null(strstr(env, "FAIRQ_CHANNEL=webhook\n"));
    fq_transport_destroy(&transport);
    fq_transport_destroy(&transport); //  Safe twice
    assert_null(transport);
}

//  2. Mail: the command gets the full RFC 5322 message, as SMTP would
//  carry it; the email channel is named whether said or not.
static void test_exec_mail(void **state)
{
    s_dir_t *dir = *state;
    const char *script = s_script(dir, "mail.sh",
                                  "cat > \"$1/stdin\"\n"
                                  "printf '%s' \"$FAIRQ_CHANNEL\" > \"$1/channel\"");
    fq_transport_t *transport = s_exec(dir, script, 0);
    fq_delivery_t msg = s_message(43, NULL);
    msg.to = "ann@example.org";
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    const char *text = s_read(dir, "stdin");
    assert_non_null(strstr(text, "From: Shop <shop@example.com>\r\n"));
    assert_non_null(strstr(text, "To: ann@example.org\r\n"));
    assert_non_null(strstr(text, "Subject: Your order\r\n"));
    assert_non_null(strstr(text, "Message-ID: <fairq.43@example.com>\r\n"));
    assert_non_null(strstr(text, "\r\n\r\nYour order has shipped.\r\n"));
    assert_string_equal(s_read(dir, "channel"), "email");

    //  A message that cannot be rendered fails for good, the command unrun
    msg = s_message(44, "email");
    msg.subject = "Hi\r\nBcc: everyone@example.org";
    s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT);
    fq_transport_destroy(&transport);
}

//  3. Exit 75 (EX_TEMPFAIL) is transient, another exit permanent; the
//  error is the exit and the first line of stderr.
static void test_exec_exit_codes(void **state)
{
    s_dir_t *dir = *state;
    fq_delivery_t msg = s_message(45, "sms");
    const char *script = s_script(dir, "tempfail.sh",
                                  "cat > /dev/null\n"
                                  "echo 'gateway busy, try later' >&2\n"
                                  "echo 'second line' >&2\n"
                                  "exit 75");
    fq_transport_t *transport = s_exec(dir, script, 0);
    assert_string_equal(s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT),
                        "exit 75: gateway busy, try later");
    fq_transport_destroy(&transport);

    script = s_script(dir, "fail.sh", "printf 'no such number\\033[31m' >&2\nexit 1");
    transport = s_exec(dir, script, 0);
    assert_string_equal(s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT),
                        "exit 1: no such number [31m");
    fq_transport_destroy(&transport);

    script = s_script(dir, "quiet.sh", "exit 2");
    transport = s_exec(dir, script, 0);
    assert_string_equal(s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT), "exit 2");
    fq_transport_destroy(&transport);

    //  Killed by a signal: transient
    script = s_script(dir, "killed.sh", "echo 'dying' >&2\nkill -TERM $$");
    transport = s_exec(dir, script, 0);
    assert_string_equal(s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT),
                        "killed by SIGTERM: dying");
    fq_transport_destroy(&transport);
}

//  Whether the process pid is gone (or a zombie no one reaped yet).
static bool s_gone(pid_t pid)
{
    char path[S_PATH_SIZE], stat[S_PATH_SIZE] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *file = fopen(path, "r");
    if (!file)
        return true;
    size_t got = fread(stat, 1, sizeof stat - 1, file);
    stat[got] = 0;
    fclose(file);
    const char *state = strrchr(stat, ')');
    return state && state[1] == ' ' && state[2] == 'Z';
}

//  4. A command that stalls is killed after the timeout, with what it
//  started (its process group): transient.
static void test_exec_timeout(void **state)
{
    s_dir_t *dir = *state;
    char body[S_PATH_SIZE];
    snprintf(body, sizeof body, "sleep %d &\necho $! > \"$1/child\"\nwait", S_STALL_S);
    const char *script = s_script(dir, "stall.sh", body);
    fq_transport_t *transport = s_exec(dir, script, S_SHORT_TIMEOUT_MS);
    fq_delivery_t msg = s_message(46, "sms");
    int64_t start = fq_test_now_ms();
    char expected[S_PATH_SIZE];
    snprintf(expected, sizeof expected, "timed out after %d ms", S_SHORT_TIMEOUT_MS);
    assert_string_equal(s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT), expected);
    assert_true(fq_test_now_ms() - start < S_STALL_S * FQ_TEST_MS_PER_S / 2);
    pid_t child = (pid_t)atoi(s_read(dir, "child"));
    assert_true(child > 0);
    int64_t deadline = fq_test_now_ms() + S_GONE_WAIT_MS;
    while (!s_gone(child) && fq_test_now_ms() < deadline)
        usleep(FQ_TEST_POLL_MS * FQ_TEST_US_PER_MS);
    assert_true(s_gone(child));
    fq_transport_destroy(&transport);
}

//  5. Large input is fed while the command reads it, and stderr read
//  while it is fed; a command that reads nothing does not hurt us.
static void test_exec_large_input(void **state)
{
    s_dir_t *dir = *state;
    char *body = malloc(S_LARGE_INPUT + 1);
    assert_non_null(body);
    memset(body, 'a', S_LARGE_INPUT);
    body[S_LARGE_INPUT] = 0;
    fq_delivery_t msg = s_message(47, "sms");
    msg.body = body;

    char chatter[S_PATH_SIZE];
    snprintf(chatter, sizeof chatter, "head -c %d /dev/zero | tr '\\0' e >&2\nwc -c > \"$1/count\"",
             S_CHATTER_BYTES);
    const char *script = s_script(dir, "count.sh", chatter);
    fq_transport_t *transport = s_exec(dir, script, 0);
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    assert_int_equal(atoi(s_read(dir, "count")), S_LARGE_INPUT);
    fq_transport_destroy(&transport);

    script = s_script(dir, "deaf.sh", "exit 0");
    transport = s_exec(dir, script, 0);
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    fq_transport_destroy(&transport);
    free(body);
}

//  6. Commands that cannot run are refused at once, with a reason.
static void test_exec_bad_config_refused(void **state)
{
    s_dir_t *dir = *state;
    const char *plain = s_script(dir, "plain.sh", "exit 0");
    char not_executable[S_PATH_SIZE * 2];
    snprintf(not_executable, sizeof not_executable, "%s", plain);
    assert_int_equal(chmod(not_executable, 0600), 0);
    char many[S_PATH_SIZE * 2] = "/bin/true";
    for (int i = 0; i < 64; i++)
        strcat(many, " x");
    const char *bad[] = {
        NULL,           "",  "   ", "true", "./run.sh", "/nonexistent-fairq/run", "/tmp",
        not_executable, many};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fq_transport_config_t cfg = {.kind = "exec", .command = bad[i]};
        char error[S_ERROR_SIZE] = "";
        fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
        if (transport)
            fail_msg("command %zu accepted", i);
        assert_true(strlen(error) > 0);
    }
    fq_transport_config_t cfg = {.kind = "exec", .command = "/bin/true --with args"};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(48, "sms");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    fq_transport_destroy(&transport);
}

//  7. A mail transport given another channel's message says so, and
//  leaves it for a sender that serves it: transient.
static void test_mail_kind_refuses_other_channels(void **state)
{
    s_dir_t *dir = *state;
    char path[S_PATH_SIZE * 2];
    snprintf(path, sizeof path, "%s/mbox", dir->dir);
    fq_transport_config_t cfg = {.kind = "file", .path = path};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(49, "sms");
    assert_string_equal(s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT),
                        "a mail transport does not deliver channel \"sms\"");
    fq_transport_destroy(&transport);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exec_delivers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_exec_mail, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_exec_exit_codes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_exec_timeout, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_exec_large_input, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_exec_bad_config_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_mail_kind_refuses_other_channels, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
