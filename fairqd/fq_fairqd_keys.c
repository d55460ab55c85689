/*  fq_fairqd_keys.c — fairqd's schema: its key table and the checks
    between its keys (see fq_fairqd_keys.h). */
#include "fq_fairqd_keys.h"
#include "fq_address.h"
#include "fq_error.h"
#include "fq_fairqd.h"
#include "fq_store.h"

//  A heartbeat timeout covers at least this many heartbeats, so that one
//  late heartbeat does not make a live sender worker dead.
#define S_HEARTBEAT_TIMEOUT_FACTOR 2

static const fq_config_key_t s_keys[] = {
#define X(...) FQ_CONFIG_KEY("FAIRQ_", __VA_ARGS__)
    FQ_FAIRQD_KEYS(X)
#undef X
};

static int s_check(fq_config_t *config, char *error, size_t size)
{
    char quoted[FQ_CONFIG_QUOTED_SIZE];
    const char *name = fq_config_str(config, FQ_FAIRQD_KEY_NAME);
    if (!fq_name_valid(name))
        return fq_config_error(config, FQ_FAIRQD_KEY_NAME, error, size,
                               "invalid value for \"name\": %s is not a valid system name (1 to "
                               "%d letters, digits, '.', '_' or '-')",
                               fq_config_quote(quoted, name), FQ_NAME_MAX);
    int rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_DATABASE_RETRY_MAX_MS,
                                      FQ_FAIRQD_KEY_DATABASE_RETRY_MIN_MS, 1, error, size);
    if (rc == 0)
        rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_HEARTBEAT_TIMEOUT_MS,
                                      FQ_FAIRQD_KEY_HEARTBEAT_MS, S_HEARTBEAT_TIMEOUT_FACTOR, error,
                                      size);
    if (rc == 0)
        rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_RETRY_CAP_MS,
                                      FQ_FAIRQD_KEY_RETRY_BASE_MS, 1, error, size);
    //  The HTTP server shares its connections among its threads, each
    //  taking at least one; one address may not be allowed more than all
    if (rc == 0)
        rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_MAX,
                                      FQ_FAIRQD_KEY_HTTP_THREADS, 1, error, size);
    if (rc == 0)
        rc = fq_config_check_at_least(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_MAX,
                                      FQ_FAIRQD_KEY_HTTP_CONNECTIONS_PER_IP, 1, error, size);
    if (rc)
        return rc;
    char pattern[FQ_STORE_BOUNCE_PATTERN_SIZE], problem[256];
    if (fq_store_bounce_pattern(fq_config_str(config, FQ_FAIRQD_KEY_SUPPRESS_BOUNCES), pattern,
                                problem, sizeof problem) != 0)
        return fq_config_error(config, FQ_FAIRQD_KEY_SUPPRESS_BOUNCES, error, size,
                               "invalid value for \"suppress_bounces\": %s", problem);
    if (*fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_BIND) &&
        !fq_config_bool(config, FQ_FAIRQD_KEY_GATEWAY_INSECURE)) {
        if (!*fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_CERT))
            return fq_config_error(config, FQ_FAIRQD_KEY_GATEWAY_BIND, error, size,
                                   "gateway_bind needs gateway_cert, the gateway's CURVE "
                                   "certificate (or gateway_insecure = true, for development "
                                   "only)");
        if (!*fq_config_str(config, FQ_FAIRQD_KEY_GATEWAY_ALLOW_DIR))
            return fq_config_error(config, FQ_FAIRQD_KEY_GATEWAY_BIND, error, size,
                                   "gateway_bind needs gateway_allow_dir, the directory of the "
                                   "sender workers' public certificates (or gateway_insecure = "
                                   "true, for development only)");
    }
    return 0;
}

static const fq_config_command_t s_commands[] = {
    [FQ_FAIRQD_COMMAND_MAKE_CERT] = {"make_cert", "PATH",
                                     "write a new CURVE certificate for gateway_cert to PATH "
                                     "(public) and PATH_secret, then exit"},
};

const fq_config_schema_t fq_fairqd_schema = {
    .program = FQ_FAIRQD_PROGRAM,
    .synopsis = "[--config PATH] [--KEY=VALUE ...]",
    .env_prefix = "FAIRQ_",
    .env_file = "FAIRQ_CONFIG",
    .keys = s_keys,
    .key_count = FQ_FAIRQD_KEY_COUNT,
    .commands = s_commands,
    .command_count = sizeof s_commands / sizeof s_commands[0],
    .check = s_check,
};
