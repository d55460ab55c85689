/*  fq_sender_keys.c — fairq-sender's schema: its key table, its command
    and the checks of its keys (see fq_sender_keys.h). */
#include "fq_sender_keys.h"
#include "fq_address.h"
#include "fq_error.h"

//  Room for what the gateway finds wrong with a connect list (it quotes
//  the endpoint).
#define S_PROBLEM_SIZE 512

static const fq_config_key_t s_keys[] = {
#define X(...) FQ_CONFIG_KEY("FAIRQ_SENDER_", __VA_ARGS__)
    FQ_SENDER_KEYS(X)
#undef X
};

static const fq_config_command_t s_commands[] = {
    [FQ_SENDER_COMMAND_MAKE_CERT] = {"make_cert", "PATH",
                                     "write a new CURVE certificate to PATH (public) and "
                                     "PATH_secret, then exit"},
};

static int s_check(fq_config_t *config, char *error, size_t size)
{
    const char *connect = fq_config_str(config, FQ_SENDER_KEY_CONNECT);
    char problem[S_PROBLEM_SIZE], quoted[FQ_CONFIG_QUOTED_SIZE];
    if (!*connect && fq_config_source(config, FQ_SENDER_KEY_CONNECT) == FQ_CONFIG_FROM_DEFAULT) {
        snprintf(error, size,
                 "--connect " FQ_SENDER_CONNECT_FORM " is required (or connect in the config "
                 "file, or %s)",
                 fq_config_key_env(config, FQ_SENDER_KEY_CONNECT));
        return FQ_EINVAL;
    }
    if (!fq_gateway_endpoints_valid(connect, problem, sizeof problem))
        return fq_config_error(
            config, FQ_SENDER_KEY_CONNECT, error, size,
            "invalid value for \"connect\": %s (want " FQ_SENDER_CONNECT_FORM ")", problem);
    const char *name = fq_config_str(config, FQ_SENDER_KEY_NAME);
    if (*name && !fq_name_valid(name))
        return fq_config_error(config, FQ_SENDER_KEY_NAME, error, size,
                               "invalid value for \"name\": %s is not a valid system name (1 to "
                               "%d letters, digits, '.', '_' or '-')",
                               fq_config_quote(quoted, name), FQ_NAME_MAX);
    return 0;
}

const fq_config_schema_t fq_sender_schema = {
    .program = "fairq-sender",
    .synopsis = "--connect " FQ_SENDER_CONNECT_FORM " [--config PATH] [--KEY=VALUE ...]",
    .env_prefix = "FAIRQ_SENDER_",
    .env_file = "FAIRQ_SENDER_CONFIG",
    .keys = s_keys,
    .key_count = FQ_SENDER_KEY_COUNT,
    .commands = s_commands,
    .command_count = sizeof s_commands / sizeof s_commands[0],
    .check = s_check,
};
