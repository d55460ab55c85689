/*  config_test.c — the configuration engine (fq_config.h), read through
    fairqd's real table (fq_fairqd_keys.h): defaults, the precedence
    default < file < environment < flag, the file's syntax (quotes,
    comments, blanks, CRLF), every malformed input with the exact message
    an operator sees, booleans, integer ranges, checks between keys,
    masked secrets in the printout, the generated help with its dashed
    flags, --version; and, through a small schema of its own, what fairqd
    does not use: commands (fairq-sender's --make-cert), secrets, another
    prefix, comparing and adopting values (fairqd's reload).

    Environments are passed explicitly (envp), so the tests do not depend
    on the variables of whoever runs them; one test uses the process's. */
#include "fq_error.h"
#include "fq_fairqd_keys.h"
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

//  Room for a temporary file's path, and for an error message naming it.
#define S_PATH_SIZE  512
#define S_ERROR_SIZE (S_PATH_SIZE + 1024)

//  The file parser's line limit (fq_config.c), as an operator reads it.
#define S_LINE_MAX 4096

static char s_error[S_ERROR_SIZE];

//  An empty environment.
static char *s_no_env[] = {NULL};

//  Loads argv (NULL-terminated, argv[0] the program) and envp into config.
static int s_load(fq_config_t *config, char **argv, char **envp)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    s_error[0] = 0;
    return fq_config_load(config, argc, argv, envp, s_error, sizeof s_error);
}

//  Writes len bytes of text to a new temporary file; path gets its name.
static void s_write_file(char *path, const char *text, size_t len)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, S_PATH_SIZE, "%s/fq_config_test_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

//  Loads a config file holding text (and argv's flags after --config).
static int s_load_file_text(fq_config_t *config, const char *text, char *path)
{
    s_write_file(path, text, strlen(text));
    char *argv[] = {"fairqd", "--config", path, NULL};
    return s_load(config, argv, s_no_env);
}

//  Checks that a config file holding text is refused with exactly
//  "config PATH:" followed by expected.
static void s_expect_file_error(const char *text, const char *expected)
{
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char path[S_PATH_SIZE];
    int rc = s_load_file_text(config, text, path);
    char wanted[S_ERROR_SIZE];
    snprintf(wanted, sizeof wanted, "config %s:%s", path, expected);
    if (rc != FQ_EINVAL)
        fail_msg("file \"%s\" was accepted (rc %d), wanted: %s", text, rc, wanted);
    assert_string_equal(s_error, wanted);
    unlink(path);
    fq_config_destroy(&config);
}

//  Checks that argv and envp are refused with exactly expected.
static void s_expect_error(char **argv, char **envp, const char *expected)
{
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    int rc = s_load(config, argv, envp);
    if (rc != FQ_EINVAL)
        fail_msg("accepted (rc %d), wanted: %s", rc, expected);
    assert_string_equal(s_error, expected);
    fq_config_destroy(&config);
}

//  Loads argv and envp, or fails the test with the error.
static void s_expect_ok(fq_config_t *config, char **argv, char **envp)
{
    if (s_load(config, argv, envp) != 0)
        fail_msg("refused: %s", s_error);
}

//  fq_config_print's output, malloc'ed. Not inlined: GCC 12 at -O2 then
//  mistakes the returned buffer for the address of the local pointer
//  (-Wdangling-pointer).
__attribute__((noinline)) static char *s_printout(fq_config_t *config)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    fq_config_print(config, out);
    fclose(out);
    return text;
}

//  A new configuration holds every default, each from "default".
static void test_defaults(void **unused)
{
    (void)unused;
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    assert_non_null(config);
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_NAME), "fairqd");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_DATABASE), "");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_HTTP_LISTEN), "127.0.0.1:8080");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_BIND), "");
    assert_false(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE));
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HEARTBEAT_MS), FQ_GATEWAY_HEARTBEAT_MS);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HEARTBEAT_TIMEOUT_MS),
                     FQ_GATEWAY_HEARTBEAT_TIMEOUT_MS);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 256);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_ACK_BATCH), 500);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_ACK_FLUSH_MS), 20);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HTTP_THREADS), 4);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HTTP_BODY_MAX), 32 * 1024 * 1024);
    //  The HTTP server's own defaults (fq_http_policy.h), one value each
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_MAX), 1000);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_MAX),
                     FQ_HTTP_CONNECTIONS_MAX);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_PER_IP), 64);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_PER_IP),
                     FQ_HTTP_CONNECTIONS_PER_IP);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HTTP_IDLE_TIMEOUT_S), 10);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_HTTP_IDLE_TIMEOUT_S),
                     FQ_HTTP_IDLE_TIMEOUT_S);
    assert_false(fq_config_bool(config, FQ_FAIRQD_KEY_METRICS_PUBLIC));
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_RETRY_BASE_MS), 60000);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_RETRY_CAP_MS), 3600000);
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_LOG_LEVEL), "info");
    for (int key = 0; key < FQ_FAIRQD_KEY_COUNT; key++) {
        assert_int_equal(fq_config_source(config, key), FQ_CONFIG_FROM_DEFAULT);
        assert_string_equal(fq_config_origin(config, key), "default");
    }
    //  Loading nothing gives the same, and asks to run
    char *argv[] = {"fairqd", NULL};
    s_expect_ok(config, argv, s_no_env);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_RUN);
    assert_null(fq_config_file(config));
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 256);
    fq_config_destroy(&config);
    fq_config_destroy(&config); //  Safe twice
    assert_null(config);
}

//  The table's names: files and flags use the key, the environment
//  FAIRQ_ and the key in capitals.
static void test_key_names(void **unused)
{
    (void)unused;
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    assert_string_equal(fq_config_key_name(config, FQ_FAIRQD_KEY_GATEWAY_BIND), "gateway_bind");
    assert_string_equal(fq_config_key_env(config, FQ_FAIRQD_KEY_GATEWAY_BIND),
                        "FAIRQ_GATEWAY_BIND");
    for (int key = 0; key < FQ_FAIRQD_KEY_COUNT; key++) {
        const char *name = fq_config_key_name(config, key);
        const char *env = fq_config_key_env(config, key);
        assert_int_equal(strncmp(env, "FAIRQ_", 6), 0);
        assert_int_equal(strlen(env), strlen(name) + 6);
        for (size_t i = 0; name[i]; i++)
            assert_int_equal(env[6 + i], name[i] == '_' ? '_' : toupper((unsigned char)name[i]));
    }
    fq_config_destroy(&config);
}

//  default < file < environment < flag, key by key, and each value knows
//  where it came from.
static void test_precedence(void **unused)
{
    (void)unused;
    char path[S_PATH_SIZE];
    const char *text = "# four keys from the file\n"
                       "prefetch = 10\n"
                       "ack_batch = 20\n"
                       "retry_base_ms = 30\n"
                       "name = from-file\n";
    s_write_file(path, text, strlen(text));
    char *envp[] = {"FAIRQ_ACK_BATCH=21",
                    "FAIRQ_RETRY_BASE_MS=31",
                    "FAIRQ_NAME=from-env",
                    "FAIRQ_UNKNOWN_KEY=ignored",
                    "OTHER=x",
                    NULL};
    char *argv[] = {"fairqd", "--config", path, "--retry_base_ms=32", "--name", "from-flag", NULL};
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    s_expect_ok(config, argv, envp);
    assert_string_equal(fq_config_file(config), path);

    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_ACK_FLUSH_MS), 20); //  Default only
    assert_int_equal(fq_config_source(config, FQ_FAIRQD_KEY_ACK_FLUSH_MS), FQ_CONFIG_FROM_DEFAULT);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 10); //  File
    assert_int_equal(fq_config_source(config, FQ_FAIRQD_KEY_PREFETCH), FQ_CONFIG_FROM_FILE);
    char origin[S_PATH_SIZE + 32];
    snprintf(origin, sizeof origin, "config %s:2", path);
    assert_string_equal(fq_config_origin(config, FQ_FAIRQD_KEY_PREFETCH), origin);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_ACK_BATCH), 21); //  Env over file
    assert_int_equal(fq_config_source(config, FQ_FAIRQD_KEY_ACK_BATCH), FQ_CONFIG_FROM_ENV);
    assert_string_equal(fq_config_origin(config, FQ_FAIRQD_KEY_ACK_BATCH),
                        "environment FAIRQ_ACK_BATCH");
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_RETRY_BASE_MS), 32); //  Flag over both
    assert_int_equal(fq_config_source(config, FQ_FAIRQD_KEY_RETRY_BASE_MS), FQ_CONFIG_FROM_FLAG);
    assert_string_equal(fq_config_origin(config, FQ_FAIRQD_KEY_RETRY_BASE_MS),
                        "flag --retry_base_ms");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_NAME), "from-flag"); //  --name value
    assert_string_equal(fq_config_origin(config, FQ_FAIRQD_KEY_NAME), "flag --name");

    //  A later load starts over: nothing of the first is left
    char *plain[] = {"fairqd", NULL};
    s_expect_ok(config, plain, s_no_env);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 256);
    assert_int_equal(fq_config_source(config, FQ_FAIRQD_KEY_PREFETCH), FQ_CONFIG_FROM_DEFAULT);
    assert_null(fq_config_file(config));
    fq_config_destroy(&config);
    unlink(path);
}

//  The config file may be named by FAIRQ_CONFIG; --config wins over it,
//  and an empty FAIRQ_CONFIG names none.
static void test_config_file_from_environment(void **unused)
{
    (void)unused;
    char path[S_PATH_SIZE], other[S_PATH_SIZE];
    s_write_file(path, "prefetch = 11\n", strlen("prefetch = 11\n"));
    s_write_file(other, "prefetch = 12\n", strlen("prefetch = 12\n"));
    char variable[S_PATH_SIZE + 16];
    snprintf(variable, sizeof variable, "FAIRQ_CONFIG=%s", path);
    char *envp[] = {variable, NULL};
    char *plain[] = {"fairqd", NULL};
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    s_expect_ok(config, plain, envp);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 11);
    assert_string_equal(fq_config_file(config), path);

    char *flagged[] = {"fairqd", "--config", other, NULL};
    s_expect_ok(config, flagged, envp);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 12);

    char *empty[] = {"FAIRQ_CONFIG=", NULL};
    s_expect_ok(config, plain, empty);
    assert_null(fq_config_file(config));
    fq_config_destroy(&config);
    unlink(path);
    unlink(other);
}

//  Without envp the process's own environment is read.
static void test_process_environment(void **unused)
{
    (void)unused;
    assert_int_equal(setenv("FAIRQ_ACK_FLUSH_MS", "17", 1), 0);
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char *argv[] = {"fairqd", NULL};
    s_expect_ok(config, argv, NULL);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_ACK_FLUSH_MS), 17);
    unsetenv("FAIRQ_ACK_FLUSH_MS");
    fq_config_destroy(&config);
}

//  Flags: --key=value, --key value, dashes for underscores, the last of a
//  repeated flag wins; environment values are taken as they are.
static void test_flag_forms(void **unused)
{
    (void)unused;
    char *argv[] = {"fairqd",
                    "--ack-batch=7",
                    "--http_listen",
                    "0.0.0.0:9090",
                    "--prefetch=3",
                    "--prefetch=2",
                    "--gateway_bind=",
                    "--database=host=db dbname=fairq",
                    NULL};
    char *envp[] = {"FAIRQ_GATEWAY_CERT=  spaces kept  ", "FAIRQ_GATEWAY_BIND=tcp://*:1", NULL};
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    s_expect_ok(config, argv, envp);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_ACK_BATCH), 7);
    assert_string_equal(fq_config_origin(config, FQ_FAIRQD_KEY_ACK_BATCH), "flag --ack-batch");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_HTTP_LISTEN), "0.0.0.0:9090");
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 2);
    //  An empty flag is an empty text, over the environment's value
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_BIND), "");
    assert_int_equal(fq_config_source(config, FQ_FAIRQD_KEY_GATEWAY_BIND), FQ_CONFIG_FROM_FLAG);
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_DATABASE), "host=db dbname=fairq");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_CERT), "  spaces kept  ");
    fq_config_destroy(&config);
}

//  --help wins over everything, even wrong flags; --print-config asks for
//  the printout after a full load.
static void test_actions(void **unused)
{
    (void)unused;
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char *help[] = {"fairqd", "--databse=x", "stray", "--help", NULL};
    s_expect_ok(config, help, s_no_env);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_HELP);
    char *short_help[] = {"fairqd", "-h", NULL};
    s_expect_ok(config, short_help, s_no_env);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_HELP);
    char *print[] = {"fairqd", "--print-config", "--prefetch=3", NULL};
    s_expect_ok(config, print, s_no_env);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_PRINT);
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 3);
    char *run[] = {"fairqd", NULL};
    s_expect_ok(config, run, s_no_env);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_RUN);
    //  A print with a wrong setting is an error like any other
    char *bad_print[] = {"fairqd", "--print-config", "--prefetch=0", NULL};
    s_expect_error(bad_print, s_no_env,
                   "flag --prefetch: invalid value for \"prefetch\": 0 is out of range (2..10000)");
    fq_config_destroy(&config);
}

//  The file: comments, blank lines, blanks around keys and values, quotes
//  (keeping blanks and '#', with \" and \\), a '#' inside a word, CRLF,
//  a byte order mark, a choice in capitals.
static void test_file_syntax(void **unused)
{
    (void)unused;
    const char *text = "\xEF\xBB\xBF# fairqd test configuration\n"
                       "\n"
                       "   # an indented comment\n"
                       "\t\n"
                       "name=quoted-nothing\n"
                       "  http_listen   =   \"  spaced # not a comment  \"   # a comment\n"
                       "gateway_bind = tcp://*:5555#not-a-comment   # but this is\n"
                       "gateway_cert = /etc/fairq/server cert  \r\n"
                       "gateway_allow_dir = \"\"\n"
                       "gateway_insecure = yes\n"
                       "database = \"host=db password=\\\"x\\\\y\\\"\"\n"
                       "log_level = WARNING\n"
                       "prefetch = +007";
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char path[S_PATH_SIZE];
    if (s_load_file_text(config, text, path))
        fail_msg("refused: %s", s_error);
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_NAME), "quoted-nothing");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_HTTP_LISTEN),
                        "  spaced # not a comment  ");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_BIND),
                        "tcp://*:5555#not-a-comment");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_CERT),
                        "/etc/fairq/server cert");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_ALLOW_DIR), "");
    assert_int_equal(fq_config_source(config, FQ_FAIRQD_KEY_GATEWAY_ALLOW_DIR),
                     FQ_CONFIG_FROM_FILE);
    assert_true(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE));
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_DATABASE), "host=db password=\"x\\y\"");
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_LOG_LEVEL), "warning");
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 7); //  Last line, no newline
    char origin[S_PATH_SIZE + 32];
    snprintf(origin, sizeof origin, "config %s:13", path);
    assert_string_equal(fq_config_origin(config, FQ_FAIRQD_KEY_PREFETCH), origin);
    unlink(path);

    //  A line of exactly the limit is read
    char *line = malloc(S_LINE_MAX + 2);
    assert_non_null(line);
    int len = snprintf(line, S_LINE_MAX + 2, "http_listen = ");
    memset(line + len, 'x', (size_t)(S_LINE_MAX - len));
    line[S_LINE_MAX] = '\n';
    line[S_LINE_MAX + 1] = 0;
    if (s_load_file_text(config, line, path))
        fail_msg("refused a line of %d bytes: %s", S_LINE_MAX, s_error);
    assert_int_equal(strlen(fq_config_str(config, FQ_FAIRQD_KEY_HTTP_LISTEN)), S_LINE_MAX - len);
    unlink(path);
    free(line);

    //  An empty file sets nothing
    if (s_load_file_text(config, "", path))
        fail_msg("refused an empty file: %s", s_error);
    assert_int_equal(fq_config_source(config, FQ_FAIRQD_KEY_PREFETCH), FQ_CONFIG_FROM_DEFAULT);
    unlink(path);
    fq_config_destroy(&config);
}

//  Every malformed line, with the message an operator sees.
static void test_file_errors(void **unused)
{
    (void)unused;
    static const struct {
        const char *text;
        const char *error; //  After "config PATH:"
    } cases[] = {
        {"databse = x\n", "1: unknown key \"databse\" (did you mean \"database\"?)"},
        {"# fine\n\nfrobnicate = 1\n", "3: unknown key \"frobnicate\""},
        {"heartbeat-msec = 1\n",
         "1: unknown key \"heartbeat-msec\" (did you mean \"heartbeat_ms\"?)"},
        {"prefetch = 3\n# again\nprefetch = 2\n",
         "3: duplicate key \"prefetch\" (first set on line 1)"},
        {"ack_batch = 1\nack-batch = 2\n", "2: duplicate key \"ack_batch\" (first set on line 1)"},
        {"just some words\n", "1: expected \"key = value\" but the line has no \"=\""},
        {"prefetch 10\n", "1: expected \"key = value\" but the line has no \"=\""},
        {"  = 5\n", "1: missing key before \"=\""},
        {"prefetch =\n", "1: missing value for \"prefetch\""},
        {"name =    # nothing\n", "1: missing value for \"name\""},
        {"prefetch = \"\"\n", "1: missing value for \"prefetch\""},
        {"prefetch = ten\n", "1: invalid value for \"prefetch\": \"ten\" is not an integer"},
        {"prefetch = 12ms\n", "1: invalid value for \"prefetch\": \"12ms\" is not an integer"},
        {"prefetch = 0x10\n", "1: invalid value for \"prefetch\": \"0x10\" is not an integer"},
        {"prefetch = 1.5\n", "1: invalid value for \"prefetch\": \"1.5\" is not an integer"},
        {"prefetch = \" 5\"\n", "1: invalid value for \"prefetch\": \" 5\" is not an integer"},
        {"prefetch = 0\n", "1: invalid value for \"prefetch\": 0 is out of range (2..10000)"},
        {"prefetch = 1\n", "1: invalid value for \"prefetch\": 1 is out of range (2..10000)"},
        {"prefetch = 10001\n",
         "1: invalid value for \"prefetch\": 10001 is out of range (2..10000)"},
        {"prefetch = -3\n", "1: invalid value for \"prefetch\": -3 is out of range (2..10000)"},
        {"prefetch = 99999999999999999999999\n",
         "1: invalid value for \"prefetch\": 99999999999999999999999 is out of range (2..10000)"},
        {"gateway_insecure = maybe\n",
         "1: invalid value for \"gateway_insecure\": \"maybe\" is not a boolean (true/false, "
         "yes/no, on/off, 1/0)"},
        {"gateway_insecure = 2\n",
         "1: invalid value for \"gateway_insecure\": \"2\" is not a boolean (true/false, yes/no, "
         "on/off, 1/0)"},
        {"log_level = verbose\n",
         "1: invalid value for \"log_level\": \"verbose\" is not one of debug|info|warning|error"},
        {"name = \"unterminated\n", "1: value of \"name\" has no closing quote"},
        {"name = \"a\\\"\n", "1: value of \"name\" has no closing quote"},
        {"name = \"a\" b\n", "1: unexpected text after the closing quote of \"name\""},
        {"name = bad/name\n",
         "1: invalid value for \"name\": \"bad/name\" is not a valid system name (1 to 64 "
         "letters, digits, '.', '_' or '-')"},
        {"prefetch = 5\nprefetch\n", "2: expected \"key = value\" but the line has no \"=\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        s_expect_file_error(cases[i].text, cases[i].error);

    //  Lines too long, and lines with a NUL byte
    size_t size = S_LINE_MAX + 64;
    char *text = malloc(size);
    assert_non_null(text);
    int len = snprintf(text, size, "prefetch = 3\nhttp_listen = ");
    memset(text + len, 'x', size - (size_t)len);
    text[size - 2] = '\n';
    text[size - 1] = 0;
    s_expect_file_error(text, "2: line is longer than 4096 bytes");
    free(text);
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char path[S_PATH_SIZE];
    s_write_file(path, "name = a\0b\n", strlen("name = a") + 3);
    char *argv[] = {"fairqd", "--config", path, NULL};
    assert_int_equal(s_load(config, argv, s_no_env), FQ_EINVAL);
    char wanted[S_ERROR_SIZE];
    snprintf(wanted, sizeof wanted, "config %s:1: line holds a NUL byte (not a text file?)", path);
    assert_string_equal(s_error, wanted);
    unlink(path);
    fq_config_destroy(&config);
}

//  A file that cannot be read is refused, naming it and the reason; a file
//  with an error is refused even when a flag would override the key.
static void test_unreadable_files(void **unused)
{
    (void)unused;
    char *missing[] = {"fairqd", "--config", "/nonexistent/fairq.conf", NULL};
    s_expect_error(missing, s_no_env,
                   "config /nonexistent/fairq.conf: could not open: No such file or directory");
    char *directory[] = {"fairqd", "--config=/", NULL};
    s_expect_error(directory, s_no_env, "config /: could not read: Is a directory");
    char *envp[] = {"FAIRQ_CONFIG=/nonexistent/env.conf", NULL};
    char *plain[] = {"fairqd", NULL};
    s_expect_error(plain, envp,
                   "config /nonexistent/env.conf: could not open: No such file or directory");

    char path[S_PATH_SIZE];
    s_write_file(path, "prefetch = lots\n", strlen("prefetch = lots\n"));
    char *overridden[] = {"fairqd", "--config", path, "--prefetch=5", NULL};
    char wanted[S_ERROR_SIZE];
    snprintf(wanted, sizeof wanted,
             "config %s:1: invalid value for \"prefetch\": \"lots\" is not an integer", path);
    s_expect_error(overridden, s_no_env, wanted);
    unlink(path);
}

//  Malformed environment variables, named in the message.
static void test_environment_errors(void **unused)
{
    (void)unused;
    char *argv[] = {"fairqd", NULL};
    static const struct {
        char *variable;
        const char *error;
    } cases[] = {
        {"FAIRQ_PREFETCH=abc",
         "environment FAIRQ_PREFETCH: invalid value for \"prefetch\": \"abc\" is not an integer"},
        {"FAIRQ_PREFETCH=", "environment FAIRQ_PREFETCH: missing value for \"prefetch\""},
        {"FAIRQ_PREFETCH=1\n2", "environment FAIRQ_PREFETCH: invalid value for \"prefetch\": "
                                "\"1\\x0a2\" is not an integer"},
        {"FAIRQ_ACK_FLUSH_MS=100000",
         "environment FAIRQ_ACK_FLUSH_MS: invalid value for \"ack_flush_ms\": 100000 is out of "
         "range (1..10000)"},
        {"FAIRQ_GATEWAY_INSECURE=",
         "environment FAIRQ_GATEWAY_INSECURE: missing value for \"gateway_insecure\""},
        {"FAIRQ_GATEWAY_INSECURE=sure",
         "environment FAIRQ_GATEWAY_INSECURE: invalid value for \"gateway_insecure\": \"sure\" "
         "is not a boolean (true/false, yes/no, on/off, 1/0)"},
        {"FAIRQ_LOG_LEVEL=loud", "environment FAIRQ_LOG_LEVEL: invalid value for \"log_level\": "
                                 "\"loud\" is not one of debug|info|warning|error"},
        {"FAIRQ_NAME=", "environment FAIRQ_NAME: invalid value for \"name\": \"\" is not a valid "
                        "system name (1 to 64 letters, digits, '.', '_' or '-')"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *envp[] = {cases[i].variable, NULL};
        s_expect_error(argv, envp, cases[i].error);
    }
    //  A long value is cut in the message
    char long_value[200] = "FAIRQ_PREFETCH=";
    memset(long_value + strlen(long_value), 'z', 150);
    char *envp[] = {long_value, NULL};
    char wanted[S_ERROR_SIZE];
    snprintf(wanted, sizeof wanted,
             "environment FAIRQ_PREFETCH: invalid value for \"prefetch\": \"%.64s...\" is not an "
             "integer",
             long_value + strlen("FAIRQ_PREFETCH="));
    s_expect_error(argv, envp, wanted);
}

//  Malformed command lines, named in the message.
static void test_flag_errors(void **unused)
{
    (void)unused;
    char *unknown[] = {"fairqd", "--databse=x", NULL};
    s_expect_error(unknown, s_no_env,
                   "flag --databse: unknown key \"databse\" (did you mean \"database\"?)");
    char *far[] = {"fairqd", "--verbose", NULL};
    s_expect_error(far, s_no_env, "flag --verbose: unknown key \"verbose\"");
    char *last[] = {"fairqd", "--prefetch", NULL};
    s_expect_error(last, s_no_env, "flag --prefetch: missing value for \"prefetch\"");
    char *followed[] = {"fairqd", "--prefetch", "--ack_batch=3", NULL};
    s_expect_error(followed, s_no_env, "flag --prefetch: missing value for \"prefetch\"");
    char *empty_int[] = {"fairqd", "--prefetch=", NULL};
    s_expect_error(empty_int, s_no_env, "flag --prefetch: missing value for \"prefetch\"");
    char *range[] = {"fairqd", "--ack_batch=0", NULL};
    s_expect_error(
        range, s_no_env,
        "flag --ack_batch: invalid value for \"ack_batch\": 0 is out of range (1..10000)");
    char *stray[] = {"fairqd", "--prefetch=3", "extra", NULL};
    s_expect_error(stray, s_no_env, "argument \"extra\": unexpected (settings are --key=value)");
    char *single_dash[] = {"fairqd", "-p", NULL};
    s_expect_error(single_dash, s_no_env, "argument \"-p\": unexpected (settings are --key=value)");
    char *dashes[] = {"fairqd", "--", NULL};
    s_expect_error(dashes, s_no_env, "argument \"--\": unexpected (settings are --key=value)");
    char *no_path[] = {"fairqd", "--config", NULL};
    s_expect_error(no_path, s_no_env, "flag --config: missing value (the config file's path)");
    char *twice[] = {"fairqd", "--config", "a", "--config=b", NULL};
    s_expect_error(twice, s_no_env, "flag --config: given more than once");
    char *print_value[] = {"fairqd", "--print-config=yes", NULL};
    s_expect_error(print_value, s_no_env, "flag --print-config: takes no value");
    char *bad_bool[] = {"fairqd", "--gateway_insecure", "maybe", NULL};
    s_expect_error(bad_bool, s_no_env,
                   "flag --gateway_insecure: invalid value for \"gateway_insecure\": \"maybe\" is "
                   "not a boolean (true/false, yes/no, on/off, 1/0)");
    char *bad_name[] = {"fairqd", "--name=a b", NULL};
    s_expect_error(bad_name, s_no_env,
                   "flag --name: invalid value for \"name\": \"a b\" is not a valid system name (1 "
                   "to 64 letters, digits, '.', '_' or '-')");
    char *bad_bounces[] = {"fairqd", "--suppress-bounces=5.1.1,5.7", NULL};
    s_expect_error(
        bad_bounces, s_no_env,
        "flag --suppress-bounces: invalid value for \"suppress_bounces\": \"5.7\" is not "
        "a reply code: write enhanced status codes (5.1.1) or basic reply codes (550), "
        "comma-separated");
    char *bad_cost[] = {"fairqd", "--fairness-cost=bits", NULL};
    s_expect_error(bad_cost, s_no_env,
                   "flag --fairness-cost: invalid value for \"fairness_cost\": \"bits\" is not one "
                   "of messages|bytes|time");
}

//  Booleans: true/false, yes/no, on/off, 1/0 in any case; a boolean flag
//  alone means true.
static void test_bools(void **unused)
{
    (void)unused;
    static const struct {
        const char *word;
        bool value;
    } words[] = {{"true", true}, {"false", false}, {"yes", true}, {"no", false},
                 {"on", true},   {"off", false},   {"1", true},   {"0", false},
                 {"TRUE", true}, {"Off", false},   {"YeS", true}, {"nO", false}};
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char flag[64], variable[64], text[64], path[S_PATH_SIZE];
        snprintf(flag, sizeof flag, "--gateway_insecure=%s", words[i].word);
        char *argv[] = {"fairqd", flag, NULL};
        s_expect_ok(config, argv, s_no_env);
        assert_int_equal(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE), words[i].value);
        snprintf(variable, sizeof variable, "FAIRQ_GATEWAY_INSECURE=%s", words[i].word);
        char *envp[] = {variable, NULL};
        char *plain[] = {"fairqd", NULL};
        s_expect_ok(config, plain, envp);
        assert_int_equal(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE), words[i].value);
        snprintf(text, sizeof text, "gateway_insecure = %s\n", words[i].word);
        if (s_load_file_text(config, text, path))
            fail_msg("refused %s: %s", text, s_error);
        assert_int_equal(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE), words[i].value);
        unlink(path);
    }
    char *alone[] = {"fairqd", "--gateway_insecure", NULL};
    s_expect_ok(config, alone, s_no_env);
    assert_true(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE));
    char *before_flag[] = {"fairqd", "--gateway_insecure", "--prefetch=3", NULL};
    s_expect_ok(config, before_flag, s_no_env);
    assert_true(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE));
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH), 3);
    char *separate[] = {"fairqd", "--gateway_insecure", "off", NULL};
    s_expect_ok(config, separate, s_no_env);
    assert_false(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE));
    //  A flag's false beats the environment's true
    char *envp[] = {"FAIRQ_GATEWAY_INSECURE=yes", NULL};
    char *no[] = {"fairqd", "--gateway_insecure=no", NULL};
    s_expect_ok(config, no, envp);
    assert_false(fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE));
    fq_config_destroy(&config);
}

//  Every integer key takes its min and max and refuses one beyond each.
static void test_int_ranges(void **unused)
{
    (void)unused;
    static const struct {
        int key;
        long long min, max;
        bool is_int;
    } keys[] = {
#define X(id, name, type, def, min, max, choices, help)                                            \
    {FQ_FAIRQD_KEY_##id, min, max, FQ_CONFIG_TYPE_##type == FQ_CONFIG_TYPE_INT},
        FQ_FAIRQD_KEYS(X)
#undef X
    };
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    int checked = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (!keys[i].is_int)
            continue;
        const char *name = fq_config_key_name(config, keys[i].key);
        long long values[] = {keys[i].min, keys[i].max};
        for (int j = 0; j < 2; j++) {
            //  Pairs that must agree (cap >= base, ...) are made to first
            char flag[128];
            snprintf(flag, sizeof flag, "--%s=%lld", name, values[j]);
            char *argv[] = {"fairqd",
                            "--retry_base_ms=1",
                            "--retry_cap_ms=604800000",
                            "--database_retry_min_ms=10",
                            "--database_retry_max_ms=3600000",
                            "--heartbeat_ms=10",
                            "--heartbeat_timeout_ms=600000",
                            "--http_threads=1",
                            "--http_connections_per_ip=1",
                            "--http_connections_max=1048576",
                            flag,
                            NULL};
            s_expect_ok(config, argv, s_no_env);
            assert_int_equal(fq_config_int(config, keys[i].key), values[j]);
        }
        long long outside[] = {keys[i].min - 1, keys[i].max + 1};
        for (int j = 0; j < 2; j++) {
            char flag[128], wanted[256];
            snprintf(flag, sizeof flag, "--%s=%lld", name, outside[j]);
            snprintf(wanted, sizeof wanted,
                     "flag --%s: invalid value for \"%s\": %lld is out of range (%lld..%lld)", name,
                     name, outside[j], keys[i].min, keys[i].max);
            char *argv[] = {"fairqd", flag, NULL};
            s_expect_error(argv, s_no_env, wanted);
        }
        checked++;
    }
    assert_true(checked >= 18); //  Eighteen integer keys today
    fq_config_destroy(&config);
}

//  Keys that must agree are checked together, and the message names both
//  values and where each came from.
static void test_checks_between_keys(void **unused)
{
    (void)unused;
    char *cap[] = {"fairqd", "--retry_base_ms=7200000", NULL};
    s_expect_error(cap, s_no_env,
                   "flag --retry_base_ms: retry_cap_ms = 3600000 (default) must be at least "
                   "retry_base_ms = 7200000 (flag --retry_base_ms)");
    char *heartbeat[] = {"fairqd", "--heartbeat_ms=2000", NULL};
    s_expect_error(heartbeat, s_no_env,
                   "flag --heartbeat_ms: heartbeat_timeout_ms = 3000 (default) must be at least "
                   "twice heartbeat_ms = 2000 (flag --heartbeat_ms)");
    char *envp[] = {"FAIRQ_DATABASE_RETRY_MAX_MS=100", NULL};
    char *retry[] = {"fairqd", "--database_retry_min_ms=200", NULL};
    s_expect_error(retry, envp,
                   "flag --database_retry_min_ms: database_retry_max_ms = 100 (environment "
                   "FAIRQ_DATABASE_RETRY_MAX_MS) must be at least database_retry_min_ms = 200 "
                   "(flag --database_retry_min_ms)");
    char *per_ip[] = {"fairqd", "--http_connections_per_ip=5000", NULL};
    s_expect_error(per_ip, s_no_env,
                   "flag --http_connections_per_ip: http_connections_max = 1000 (default) must be "
                   "at least http_connections_per_ip = 5000 (flag --http_connections_per_ip)");
    char *threads_env[] = {"FAIRQ_HTTP_THREADS=8", NULL};
    char *total[] = {"fairqd", "--http_connections_max=4", "--http_connections_per_ip=2", NULL};
    s_expect_error(total, threads_env,
                   "flag --http_connections_max: http_connections_max = 4 (flag "
                   "--http_connections_max) must be at least http_threads = 8 (environment "
                   "FAIRQ_HTTP_THREADS)");
    char *bind[] = {"fairqd", "--gateway_bind=tcp://*:5555", NULL};
    s_expect_error(bind, s_no_env,
                   "flag --gateway_bind: gateway_bind needs gateway_cert, the gateway's CURVE "
                   "certificate (or gateway_insecure = true, for development only)");
    char *no_allow[] = {"fairqd", "--gateway_bind=tcp://*:5555", "--gateway_cert=/x.cert", NULL};
    s_expect_error(no_allow, s_no_env,
                   "flag --gateway_bind: gateway_bind needs gateway_allow_dir, the directory of "
                   "the sender workers' public certificates (or gateway_insecure = true, for "
                   "development only)");
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char *insecure[] = {"fairqd", "--gateway_bind=tcp://*:5555", "--gateway_insecure", NULL};
    s_expect_ok(config, insecure, s_no_env);
    char *curve[] = {"fairqd", "--gateway_bind=tcp://*:5555", "--gateway_cert=/x.cert",
                     "--gateway_allow_dir=/allowed", NULL};
    s_expect_ok(config, curve, s_no_env);
    char *exact[] = {"fairqd", "--heartbeat_ms=1500", NULL}; //  Twice is enough
    s_expect_ok(config, exact, s_no_env);
    //  One-click unsubscribe: a listener names its public URL, a URL is
    //  https (or local) and has a secret, a mailto goes with a URL
    char *listen_alone[] = {"fairqd", "--unsubscribe-listen=0.0.0.0:8443", NULL};
    s_expect_error(listen_alone, s_no_env,
                   "flag --unsubscribe-listen: unsubscribe_listen needs unsubscribe_url, the "
                   "public https:// URL recipients reach the listener by");
    char *plain_http[] = {"fairqd", "--unsubscribe-url=http://mail.example.org",
                          "--unsubscribe-secret-file=/etc/fairq/unsubscribe.secret", NULL};
    s_expect_error(plain_http, s_no_env,
                   "flag --unsubscribe-url: invalid value for \"unsubscribe_url\": "
                   "\"http://mail.example.org\": it must start with https:// (http:// only for "
                   "localhost, 127.0.0.1 or [::1])");
    char *query[] = {"fairqd", "--unsubscribe-url=https://mail.example.org/u?x=1",
                     "--unsubscribe-secret-file=/etc/fairq/unsubscribe.secret", NULL};
    s_expect_error(query, s_no_env,
                   "flag --unsubscribe-url: invalid value for \"unsubscribe_url\": "
                   "\"https://mail.example.org/u?x=1\": it holds a space, a quote, <, >, ?, # or "
                   "a byte that is not printable ASCII");
    char *no_secret[] = {"fairqd", "--unsubscribe-url=https://mail.example.org", NULL};
    s_expect_error(no_secret, s_no_env,
                   "flag --unsubscribe-url: unsubscribe_url needs unsubscribe_secret_file, the "
                   "secret that seals its links");
    char *mailto_alone[] = {"fairqd", "--unsubscribe-mailto=leave@example.org", NULL};
    s_expect_error(mailto_alone, s_no_env,
                   "flag --unsubscribe-mailto: unsubscribe_mailto needs unsubscribe_url: the "
                   "mailto goes beside a one-click link, not alone");
    char *bad_mailto[] = {"fairqd", "--unsubscribe-url=https://mail.example.org",
                          "--unsubscribe-secret-file=/s", "--unsubscribe-mailto=leave", NULL};
    s_expect_error(bad_mailto, s_no_env,
                   "flag --unsubscribe-mailto: invalid value for \"unsubscribe_mailto\": "
                   "\"leave\": address is not local@domain");
    char *unsubscribe[] = {"fairqd",
                           "--unsubscribe-listen=127.0.0.1:8443",
                           "--unsubscribe-url=https://mail.example.org/",
                           "--unsubscribe-secret-file=/etc/fairq/unsubscribe.secret",
                           "--unsubscribe-mailto=leave@example.org",
                           NULL};
    s_expect_ok(config, unsubscribe, s_no_env);
    char *local[] = {"fairqd", "--unsubscribe-url=http://127.0.0.1:8443",
                     "--unsubscribe-secret-file=/s", NULL};
    s_expect_ok(config, local, s_no_env);
    fq_config_destroy(&config);
}

//  "did you mean" names a key one or two edits away, and only then.
static void test_suggestions(void **unused)
{
    (void)unused;
    static const struct {
        char *flag;
        const char *error;
    } cases[] = {
        {"--prefech=1", "flag --prefech: unknown key \"prefech\" (did you mean \"prefetch\"?)"},
        {"--log-levl=info",
         "flag --log-levl: unknown key \"log-levl\" (did you mean \"log_level\"?)"},
        {"--hearbeat_ms=1",
         "flag --hearbeat_ms: unknown key \"hearbeat_ms\" (did you mean \"heartbeat_ms\"?)"},
        {"--nmae=x", "flag --nmae: unknown key \"nmae\" (did you mean \"name\"?)"},
        {"--retry=1", "flag --retry: unknown key \"retry\""},
        {"--x=1", "flag --x: unknown key \"x\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[] = {"fairqd", cases[i].flag, NULL};
        s_expect_error(argv, s_no_env, cases[i].error);
    }
}

//  Connection strings are shown with their passwords masked, in both of
//  libpq's forms; one that cannot be read is masked whole.
static void test_masked_conninfo(void **unused)
{
    (void)unused;
    static const struct {
        const char *conninfo;
        const char *shown;
    } cases[] = {
        {"", ""},
        {"host=db dbname=fairq", "host=db dbname=fairq"},
        {"host=db password=secret dbname=x", "host=db password=******** dbname=x"},
        {"password = 'se cret\\' x' host=db", "password = ******** host=db"},
        {"host=db sslpassword=keypass passfile=/p", "host=db sslpassword=******** passfile=/p"},
        {"password=", "password=********"},
        {"postgresql://fairq:secret@db:5432/fairq?sslmode=require&password=secret2",
         "postgresql://fairq:********@db:5432/fairq?sslmode=require&password=********"},
        {"postgres://fairq@db/fairq", "postgres://fairq@db/fairq"},
        {"postgresql:///fairq?host=/run/pg", "postgresql:///fairq?host=/run/pg"},
        {"this is = not a conninfo password=secret", "********"},
        {"host='unterminated password=secret", "********"},
    };
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char flag[256];
        snprintf(flag, sizeof flag, "--database=%s", cases[i].conninfo);
        char *argv[] = {"fairqd", flag, NULL};
        s_expect_ok(config, argv, s_no_env);
        assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_DATABASE), cases[i].conninfo);
        char *shown = fq_config_shown(config, FQ_FAIRQD_KEY_DATABASE);
        assert_string_equal(shown, cases[i].shown);
        free(shown);
    }
    //  The LISTEN connection's string is one too: empty by default (the
    //  intake then uses database's), masked like it
    s_expect_ok(config, (char *[]){"fairqd", NULL}, s_no_env);
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_DATABASE_LISTEN), "");
    char *listen_argv[] = {"fairqd", "--database-listen=host=db password=secret", NULL};
    s_expect_ok(config, listen_argv, s_no_env);
    char *listen = fq_config_shown(config, FQ_FAIRQD_KEY_DATABASE_LISTEN);
    assert_string_equal(listen, "host=db password=********");
    free(listen);
    //  Other text keys are shown as they are
    char *argv[] = {"fairqd", "--gateway_cert=/etc/password=x", NULL};
    s_expect_ok(config, argv, s_no_env);
    char *shown = fq_config_shown(config, FQ_FAIRQD_KEY_GATEWAY_CERT);
    assert_string_equal(shown, "/etc/password=x");
    free(shown);
    fq_config_destroy(&config);
}

//  The printout lists every key once with its source, masks the password,
//  and is a config file that loads back to the same values.
static void test_print(void **unused)
{
    (void)unused;
    char path[S_PATH_SIZE];
    const char *text = "database = \"host=db password=hunter2 dbname=fairq\"\n"
                       "http_listen = \"0.0.0.0:80 # \\\"odd\\\"\"\n";
    s_write_file(path, text, strlen(text));
    char *envp[] = {"FAIRQ_PREFETCH=9", NULL};
    char *argv[] = {"fairqd", "--config", path, "--gateway_insecure", "--log_level=debug", NULL};
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    s_expect_ok(config, argv, envp);
    char *printed = s_printout(config);
    print_message("%s", printed);
    assert_null(strstr(printed, "hunter2"));
    char line[S_PATH_SIZE + 128];
    snprintf(line, sizeof line,
             "\ndatabase = \"host=db password=******** dbname=fairq\"  # config %s:1\n", path);
    assert_non_null(strstr(printed, line));
    assert_non_null(strstr(printed, "\nprefetch = 9  # environment FAIRQ_PREFETCH\n"));
    assert_non_null(strstr(printed, "\ngateway_insecure = true  # flag --gateway_insecure\n"));
    assert_non_null(strstr(printed, "\nlog_level = debug  # flag --log_level\n"));
    assert_non_null(strstr(printed, "\nname = \"fairqd\"  # default\n"));
    assert_non_null(strstr(printed, "\nack_batch = 500  # default\n"));
    for (int key = 0; key < FQ_FAIRQD_KEY_COUNT; key++) {
        char start[128];
        snprintf(start, sizeof start, "\n%s = ", fq_config_key_name(config, key));
        const char *first = strstr(printed, start);
        assert_non_null(first);
        assert_null(strstr(first + 1, start));
    }

    //  Read back: the same values, the password now the mask
    char copy[S_PATH_SIZE];
    s_write_file(copy, printed, strlen(printed));
    fq_config_t *again = fq_config_new(&fq_fairqd_schema);
    char *reread[] = {"fairqd", "--config", copy, NULL};
    s_expect_ok(again, reread, s_no_env);
    for (int key = 0; key < FQ_FAIRQD_KEY_COUNT; key++) {
        if (key == FQ_FAIRQD_KEY_DATABASE)
            continue;
        char *before = fq_config_shown(config, key), *after = fq_config_shown(again, key);
        assert_string_equal(before, after);
        free(before);
        free(after);
    }
    assert_string_equal(fq_config_str(again, FQ_FAIRQD_KEY_DATABASE),
                        "host=db password=******** dbname=fairq");
    assert_string_equal(fq_config_str(again, FQ_FAIRQD_KEY_HTTP_LISTEN), "0.0.0.0:80 # \"odd\"");
    fq_config_destroy(&again);
    fq_config_destroy(&config);
    free(printed);
    unlink(copy);
    unlink(path);
}

//  A key's flag as the help shows it: "--" and the name with dashes.
static void s_flag_name(char *out, size_t size, const char *name)
{
    int len = snprintf(out, size, "--%s", name);
    for (int i = 2; i < len && (size_t)i < size; i++)
        if (out[i] == '_')
            out[i] = '-';
}

//  fq_config_help's output, malloc'ed (not inlined, as s_printout).
__attribute__((noinline)) static char *s_help(fq_config_t *config)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    fq_config_help(config, out);
    fclose(out);
    return text;
}

//  The help names every key with its flag (dashes, the one spelling
//  shown), its placeholder, variable and default, says that underscores
//  are taken too, and lists --version.
static void test_help(void **unused)
{
    (void)unused;
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char *text = s_help(config);
    assert_int_equal(strncmp(text, "usage: fairqd [--config PATH]", 29), 0);
    for (int key = 0; key < FQ_FAIRQD_KEY_COUNT; key++) {
        char flag[128], line[160];
        s_flag_name(flag, sizeof flag, fq_config_key_name(config, key));
        snprintf(line, sizeof line, "\n  %s=", flag);
        assert_non_null(strstr(text, line));
        assert_non_null(strstr(text, fq_config_key_env(config, key)));
    }
    assert_non_null(strstr(text, "--prefetch=2..10000  (FAIRQ_PREFETCH, default 256)\n"));
    assert_non_null(
        strstr(text, "\n  --http-listen=TEXT  (FAIRQ_HTTP_LISTEN, default \"127.0.0.1:8080\")\n"));
    assert_non_null(strstr(text, "--gateway-insecure=true|false  (FAIRQ_GATEWAY_INSECURE, "
                                 "default false)\n"));
    assert_non_null(strstr(text, "--log-level=debug|info|warning|error"));
    assert_null(strstr(text, "--http_listen="));
    assert_non_null(strstr(text, "an underscore may stand for a dash"));
    assert_non_null(strstr(text, "\n       fairqd --version "));
    assert_non_null(strstr(text, "FAIRQ_CONFIG"));
    free(text);
    fq_config_destroy(&config);
}

//  --version wins over every argument but --help, even a wrong one.
static void test_version(void **unused)
{
    (void)unused;
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char *version[] = {"fairqd", "--databse=x", "--version", NULL};
    s_expect_ok(config, version, s_no_env);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_VERSION);
    char *both[] = {"fairqd", "--version", "-h", NULL};
    s_expect_ok(config, both, s_no_env);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_HELP);
    assert_int_equal(fq_config_command(config, NULL), -1);
    fq_config_destroy(&config);
    char *valued[] = {"fairqd", "--version=2", NULL};
    s_expect_error(valued, s_no_env, "flag --version: takes no value");
}

//  Dashes and underscores are one: in flags and in the file, both ways.
static void test_dash_underscore_alias(void **unused)
{
    (void)unused;
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char *dashed[] = {"fairqd", "--http-listen=a:1", "--ack_flush-ms=7", NULL};
    s_expect_ok(config, dashed, s_no_env);
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_HTTP_LISTEN), "a:1");
    assert_string_equal(fq_config_origin(config, FQ_FAIRQD_KEY_HTTP_LISTEN), "flag --http-listen");
    assert_int_equal(fq_config_int(config, FQ_FAIRQD_KEY_ACK_FLUSH_MS), 7);
    char path[S_PATH_SIZE];
    if (s_load_file_text(config, "http-listen = b:2\n", path) != 0)
        fail_msg("refused: %s", s_error);
    assert_string_equal(fq_config_str(config, FQ_FAIRQD_KEY_HTTP_LISTEN), "b:2");
    unlink(path);
    //  The command line's own flags are no keys of the file
    s_expect_file_error("print-config = 1\n", "1: unknown key \"print-config\"");
    char *print[] = {"fairqd", "--print_config", NULL};
    s_expect_ok(config, print, s_no_env);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_PRINT);
    fq_config_destroy(&config);
}

//  ---------------------------------------------------------------------
//  A schema of the test's own: another prefix, a secret, two commands
//  (one with a value, one without), a check that needs a key.

enum { S_KEY_URL, S_KEY_PASSWORD, S_KEY_WORKERS, S_KEY_LEVEL, S_KEY_COUNT };
enum { S_COMMAND_MAKE, S_COMMAND_LIST, S_COMMAND_COUNT };

#define S_TEST_KEYS(X)                                                                             \
    X(URL, url, STRING, "", 0, 0, NULL, "where to")                                                \
    X(PASSWORD, password, SECRET, "", 0, 0, NULL, "a secret")                                      \
    X(WORKERS, workers, INT, "2", 1, 9, NULL, "how many")                                          \
    X(LEVEL, level, CHOICE, "low", 0, 0, "low|high", "how much")

static const fq_config_key_t s_test_keys[] = {
#define X(...) FQ_CONFIG_KEY("TEST_", __VA_ARGS__)
    S_TEST_KEYS(X)
#undef X
};

static const fq_config_command_t s_test_commands[] = {
    [S_COMMAND_MAKE] = {"make_thing", "PATH", "make a thing at PATH"},
    [S_COMMAND_LIST] = {"list", NULL, "list the things"},
};

static int s_test_check(fq_config_t *config, char *error, size_t size)
{
    if (!*fq_config_str(config, S_KEY_URL)) {
        snprintf(error, size, "--url is required");
        return FQ_EINVAL;
    }
    return 0;
}

static const fq_config_schema_t s_test_schema = {
    .program = "tester",
    .synopsis = "--url URL [--KEY=VALUE ...]",
    .env_prefix = "TEST_",
    .env_file = "TEST_CONFIG",
    .keys = s_test_keys,
    .key_count = S_KEY_COUNT,
    .commands = s_test_commands,
    .command_count = S_COMMAND_COUNT,
    .check = s_test_check,
};

//  Another program's schema: its prefix and file variable, its check, a
//  secret masked in the printout (and empty shown as empty), its help.
static void test_other_schema(void **unused)
{
    (void)unused;
    fq_config_t *config = fq_config_new(&s_test_schema);
    assert_non_null(config);
    char *none[] = {"tester", NULL};
    assert_int_equal(s_load(config, none, s_no_env), FQ_EINVAL);
    assert_string_equal(s_error, "--url is required");

    char path[S_PATH_SIZE], variable[S_PATH_SIZE + 16];
    const char *text = "url = from-file\nworkers = 3\npassword = \"s3cret #1\"\n";
    s_write_file(path, text, strlen(text));
    snprintf(variable, sizeof variable, "TEST_CONFIG=%s", path);
    char *envp[] = {variable, "TEST_WORKERS=4", "FAIRQ_WORKERS=5", NULL};
    char *print[] = {"tester", "--print-config", "--level=HIGH", NULL};
    s_expect_ok(config, print, envp);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_PRINT);
    assert_string_equal(fq_config_str(config, S_KEY_URL), "from-file");
    assert_int_equal(fq_config_int(config, S_KEY_WORKERS), 4);
    assert_string_equal(fq_config_str(config, S_KEY_LEVEL), "high");
    assert_string_equal(fq_config_str(config, S_KEY_PASSWORD), "s3cret #1");
    char *printed = s_printout(config);
    assert_null(strstr(printed, "s3cret"));
    assert_int_equal(strncmp(printed, "# tester configuration:", 23), 0);
    char line[S_PATH_SIZE + 64];
    snprintf(line, sizeof line, "\npassword = \"********\"  # config %s:3\n", path);
    assert_non_null(strstr(printed, line));
    assert_non_null(strstr(printed, "\nworkers = 4  # environment TEST_WORKERS\n"));
    assert_non_null(strstr(printed, "\nlevel = high  # flag --level\n"));
    free(printed);
    char *empty[] = {"tester", "--url=x", NULL};
    s_expect_ok(config, empty, s_no_env);
    char *shown = fq_config_shown(config, S_KEY_PASSWORD);
    assert_string_equal(shown, "");
    free(shown);

    char *unknown[] = {"tester", "--url=x", "--wrokers=3", NULL};
    assert_int_equal(s_load(config, unknown, s_no_env), FQ_EINVAL);
    assert_string_equal(s_error,
                        "flag --wrokers: unknown key \"wrokers\" (did you mean \"workers\"?)");

    char *help = s_help(config);
    assert_int_equal(strncmp(help, "usage: tester --url URL", 23), 0);
    assert_non_null(strstr(help, "\n       tester --make-thing PATH\n           make a thing"));
    assert_non_null(strstr(help, "\n       tester --list\n"));
    assert_non_null(strstr(help, "\n  --password=TEXT  (TEST_PASSWORD, default \"\")\n"));
    assert_non_null(strstr(help, "TEST_CONFIG"));
    free(help);
    unlink(path);
    fq_config_destroy(&config);
}

//  A command asks for something else than running: its value is taken,
//  the other flags are checked, and no file, variable or check is read.
static void test_commands(void **unused)
{
    (void)unused;
    fq_config_t *config = fq_config_new(&s_test_schema);
    char *envp[] = {"TEST_WORKERS=oops", "TEST_CONFIG=/nonexistent", NULL};
    const char *value = "unset";
    char *make[] = {"tester", "--make-thing", "/tmp/x", NULL};
    s_expect_ok(config, make, envp);
    assert_int_equal(fq_config_action(config), FQ_CONFIG_COMMAND);
    assert_int_equal(fq_config_command(config, &value), S_COMMAND_MAKE);
    assert_string_equal(value, "/tmp/x");
    char *equals[] = {"tester", "--workers=3", "--make_thing=/tmp/y", NULL};
    s_expect_ok(config, equals, envp);
    assert_int_equal(fq_config_command(config, &value), S_COMMAND_MAKE);
    assert_string_equal(value, "/tmp/y");
    char *list[] = {"tester", "--list", NULL};
    s_expect_ok(config, list, envp);
    assert_int_equal(fq_config_command(config, &value), S_COMMAND_LIST);
    assert_null(value);

    char *no_path[] = {"tester", "--make-thing", NULL};
    assert_int_equal(s_load(config, no_path, envp), FQ_EINVAL);
    assert_string_equal(s_error, "flag --make-thing: missing value (PATH)");
    char *list_value[] = {"tester", "--list=all", NULL};
    assert_int_equal(s_load(config, list_value, envp), FQ_EINVAL);
    assert_string_equal(s_error, "flag --list: takes no value");
    char *bad_flag[] = {"tester", "--make-thing", "/tmp/x", "--workers=0", NULL};
    assert_int_equal(s_load(config, bad_flag, envp), FQ_EINVAL);
    assert_string_equal(s_error,
                        "flag --workers: invalid value for \"workers\": 0 is out of range (1..9)");
    fq_config_destroy(&config);
}

//  Two loads compared key by key, and one key's value taken over with
//  its source: what fairqd's reload does.
static void test_equal_and_adopt(void **unused)
{
    (void)unused;
    fq_config_t *running = fq_config_new(&fq_fairqd_schema);
    fq_config_t *next = fq_config_new(&fq_fairqd_schema);
    char *first[] = {"fairqd", "--prefetch=10", NULL};
    s_expect_ok(running, first, s_no_env);
    char *envp[] = {"FAIRQ_LOG_LEVEL=DEBUG", NULL};
    char *second[] = {"fairqd", "--prefetch=010", "--splitters=3", NULL};
    s_expect_ok(next, second, envp);
    assert_true(fq_config_equal(running, next, FQ_FAIRQD_KEY_PREFETCH)); //  10 is 010
    assert_true(fq_config_equal(running, next, FQ_FAIRQD_KEY_NAME));
    assert_false(fq_config_equal(running, next, FQ_FAIRQD_KEY_SPLITTERS));
    assert_false(fq_config_equal(running, next, FQ_FAIRQD_KEY_LOG_LEVEL));
    assert_int_equal(fq_config_adopt(running, next, FQ_FAIRQD_KEY_LOG_LEVEL), 0);
    assert_string_equal(fq_config_str(running, FQ_FAIRQD_KEY_LOG_LEVEL), "debug");
    assert_int_equal(fq_config_source(running, FQ_FAIRQD_KEY_LOG_LEVEL), FQ_CONFIG_FROM_ENV);
    assert_string_equal(fq_config_origin(running, FQ_FAIRQD_KEY_LOG_LEVEL),
                        "environment FAIRQ_LOG_LEVEL");
    assert_true(fq_config_equal(running, next, FQ_FAIRQD_KEY_LOG_LEVEL));
    assert_int_equal(fq_config_int(running, FQ_FAIRQD_KEY_SPLITTERS), 2); //  Not adopted
    fq_config_destroy(&next);
    //  The adopted value is the running configuration's own
    assert_string_equal(fq_config_str(running, FQ_FAIRQD_KEY_LOG_LEVEL), "debug");
    fq_config_destroy(&running);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_key_names),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_config_file_from_environment),
        cmocka_unit_test(test_process_environment),
        cmocka_unit_test(test_flag_forms),
        cmocka_unit_test(test_actions),
        cmocka_unit_test(test_file_syntax),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_unreadable_files),
        cmocka_unit_test(test_environment_errors),
        cmocka_unit_test(test_flag_errors),
        cmocka_unit_test(test_bools),
        cmocka_unit_test(test_int_ranges),
        cmocka_unit_test(test_checks_between_keys),
        cmocka_unit_test(test_suggestions),
        cmocka_unit_test(test_masked_conninfo),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_dash_underscore_alias),
        cmocka_unit_test(test_other_schema),
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_equal_and_adopt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
