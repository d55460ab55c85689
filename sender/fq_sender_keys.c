/*  fq_sender_keys.c — fairq-sender's schema: its key table, its command
    and the checks of its keys (see fq_sender_keys.h). */
#include "fq_sender_keys.h"
#include "fq_address.h"
#include "fq_error.h"
#include "fq_rate.h"
#include <string.h>

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

//  A text setting that may be left out: NULL when empty.
static const char *s_optional(fq_config_t *config, fq_sender_key_t key)
{
    const char *value = fq_config_str(config, key);
    return *value ? value : NULL;
}

//  Whether channel needs exec_command: any but http, and email when its
//  transport is exec.
static bool s_needs_exec(fq_config_t *config, const char *channel)
{
    if (strcmp(channel, FQ_CHANNEL_EMAIL) == 0)
        return strcmp(fq_config_str(config, FQ_SENDER_KEY_TRANSPORT), "exec") == 0;
    return strcmp(channel, FQ_CHANNEL_HTTP) != 0;
}

//  The channels and what they need.
static int s_check_channels(fq_config_t *config, char *error, size_t size)
{
    char names[FQ_SENDER_CHANNELS_MAX][FQ_SENDER_CHANNEL_NAME_MAX + 1];
    int count;
    char problem[S_PROBLEM_SIZE];
    if (fq_sender_channels_parse(fq_config_str(config, FQ_SENDER_KEY_CHANNELS), names, &count,
                                 problem, sizeof problem) != 0)
        return fq_config_error(config, FQ_SENDER_KEY_CHANNELS, error, size,
                               "invalid value for \"channels\": %s", problem);
    int sizes[FQ_SENDER_CHANNELS_MAX] = {0};
    if (fq_sender_pools_parse(fq_config_str(config, FQ_SENDER_KEY_CHANNEL_CONCURRENCY), names,
                              count, sizes, problem, sizeof problem) != 0)
        return fq_config_error(config, FQ_SENDER_KEY_CHANNEL_CONCURRENCY, error, size,
                               "invalid value for \"channel_concurrency\": %s", problem);
    for (int i = 0; i < count; i++) {
        if (!s_needs_exec(config, names[i]) || s_optional(config, FQ_SENDER_KEY_EXEC_COMMAND))
            continue;
        if (strcmp(names[i], FQ_CHANNEL_EMAIL) == 0)
            return fq_config_error(config, FQ_SENDER_KEY_TRANSPORT, error, size,
                                   "transport exec (the email channel's) needs exec_command, "
                                   "which is not set");
        return fq_config_error(config, FQ_SENDER_KEY_CHANNELS, error, size,
                               "channel \"%s\" is served by exec_command, which is not set",
                               names[i]);
    }
    return 0;
}

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
    const char *max_rate = fq_config_str(config, FQ_SENDER_KEY_MAX_RATE);
    fq_rate_t rate;
    if (*max_rate && fq_rate_parse(max_rate, &rate, problem, sizeof problem) != 0)
        return fq_config_error(config, FQ_SENDER_KEY_MAX_RATE, error, size,
                               "invalid value for \"max_rate\": %s", problem);
    return s_check_channels(config, error, size);
}

int fq_sender_channels_from(fq_config_t *settings, fq_sender_config_t *config,
                            char names[FQ_SENDER_CHANNELS_MAX][FQ_SENDER_CHANNEL_NAME_MAX + 1])
{
    config->transport = (fq_transport_config_t){
        .kind = fq_config_str(settings, FQ_SENDER_KEY_TRANSPORT),
        .url = s_optional(settings, FQ_SENDER_KEY_SMTP_URL),
        .username = s_optional(settings, FQ_SENDER_KEY_SMTP_USER),
        .password = s_optional(settings, FQ_SENDER_KEY_SMTP_PASSWORD),
        .starttls = fq_config_str(settings, FQ_SENDER_KEY_STARTTLS),
        .insecure_tls = fq_config_bool(settings, FQ_SENDER_KEY_TLS_INSECURE),
        .timeout_ms = fq_config_int(settings, FQ_SENDER_KEY_SMTP_TIMEOUT_MS),
        .helo = s_optional(settings, FQ_SENDER_KEY_HELO),
        .path = s_optional(settings, FQ_SENDER_KEY_FILE),
        .message_id_domain = s_optional(settings, FQ_SENDER_KEY_MESSAGE_ID_DOMAIN),
        .command = s_optional(settings, FQ_SENDER_KEY_EXEC_COMMAND)};
    //  The email channel's exec runs as long as any exec may
    if (strcmp(config->transport.kind, "exec") == 0)
        config->transport.timeout_ms = fq_config_int(settings, FQ_SENDER_KEY_EXEC_TIMEOUT_MS);
    const fq_transport_config_t http = {
        .kind = "http",
        .timeout_ms = fq_config_int(settings, FQ_SENDER_KEY_HTTP_TIMEOUT_MS),
        .connect_timeout_ms = fq_config_int(settings, FQ_SENDER_KEY_HTTP_CONNECT_TIMEOUT_MS),
        .ca_file = s_optional(settings, FQ_SENDER_KEY_HTTP_CA_FILE),
        .insecure_tls = fq_config_bool(settings, FQ_SENDER_KEY_HTTP_INSECURE_TLS)};
    const fq_transport_config_t exec = {.kind = "exec",
                                        .command = s_optional(settings, FQ_SENDER_KEY_EXEC_COMMAND),
                                        .timeout_ms =
                                            fq_config_int(settings, FQ_SENDER_KEY_EXEC_TIMEOUT_MS)};

    char problem[S_PROBLEM_SIZE];
    int count;
    int sizes[FQ_SENDER_CHANNELS_MAX] = {0};
    if (fq_sender_channels_parse(fq_config_str(settings, FQ_SENDER_KEY_CHANNELS), names, &count,
                                 problem, sizeof problem) != 0 ||
        fq_sender_pools_parse(fq_config_str(settings, FQ_SENDER_KEY_CHANNEL_CONCURRENCY), names,
                              count, sizes, problem, sizeof problem) != 0)
        return FQ_EINVAL;
    config->nchannels = count;
    for (int i = 0; i < count; i++) {
        config->channels[i].name = names[i];
        config->channels[i].concurrency = sizes[i];
        if (strcmp(names[i], FQ_CHANNEL_EMAIL) == 0)
            config->channels[i].transport = config->transport;
        else if (strcmp(names[i], FQ_CHANNEL_HTTP) == 0)
            config->channels[i].transport = http;
        else
            config->channels[i].transport = exec;
    }
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
