/*  fq_cli_args.c — option parsing and argument checks of the fairq client. */
#include "fq_cli_args.h"
#include "fq_limits.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  getopt_long's value for option i is S_OPTION_BASE + i: above every
//  character, so that no option is mistaken for a short one.
#define S_OPTION_BASE 1000

//  Room for an option's name spelled with underscores ("timeout_s"):
//  the longest name in the tables is far shorter
#define S_NAME_SIZE 32

//  An Idempotency-Key's length (API.md: 1..255 bytes)
#define S_IDEMPOTENCY_KEY_MAX 255

//  Printable ASCII, what a header value may hold
#define S_PRINTABLE_FIRST ' '
#define S_PRINTABLE_LAST  '~'

//  RFC 3339's fields: a date-time's six, an offset's two, and their
//  ranges (a second may be 60: a leap second)
#define S_DATE_TIME_FIELDS 6
#define S_OFFSET_FIELDS    2
#define S_MONTHS           12
#define S_FEBRUARY         2
#define S_HOUR_MAX         23
#define S_MINUTE_MAX       59
#define S_SECOND_MAX       60

//  Room for the list of choices in a message
#define S_CHOICES_SIZE 256

//  Units of a relative time ("+30m")
#define S_MINUTE_S 60
#define S_HOUR_S   3600
#define S_DAY_S    86400

//  Relative times reach at most ten years ahead: far enough for any
//  campaign, and far from overflowing when added to now
#define S_RELATIVE_MAX_S ((int64_t)10 * 366 * S_DAY_S)

//  Option i of all the tables, counting through them in order.
static const fq_cli_option_t *s_option(const fq_cli_args_t *args, size_t index)
{
    for (size_t t = 0; t < args->ntables; t++) {
        const fq_cli_option_t *table = args->tables[t];
        for (size_t i = 0; table && table[i].name; i++, index--)
            if (index == 0)
                return &table[i];
    }
    return NULL;
}

static int s_find(const fq_cli_args_t *args, const char *name)
{
    const fq_cli_option_t *option;
    for (size_t i = 0; (option = s_option(args, i)) != NULL; i++)
        if (strcmp(option->name, name) == 0)
            return (int)i;
    return -1;
}

int fq_cli_args_parse(fq_cli_args_t *args, int argc, char **argv, bool stop_at_word, int *next,
                      const char *prefix)
{
    //  Each option, its spelling with underscores, --help and the end
    struct option longopts[2 * FQ_CLI_OPTIONS_MAX + 2];
    char underscored[FQ_CLI_OPTIONS_MAX][S_NAME_SIZE];
    size_t count = 0, nlong = 0;
    const fq_cli_option_t *option;
    while ((option = s_option(args, count)) != NULL) {
        //  A programming error, not a user's: the tables are ours
        if (count >= FQ_CLI_OPTIONS_MAX || strlen(option->name) >= S_NAME_SIZE) {
            fq_cli_error("too many options, or too long a name, for %s", prefix);
            return FQ_CLI_EXIT_USAGE;
        }
        int has_arg = option->value ? required_argument : no_argument;
        int value = S_OPTION_BASE + (int)count;
        longopts[nlong++] = (struct option){option->name, has_arg, NULL, value};
        //  Flags are spelled with dashes; the API's fields, with
        //  underscores (max_inflight, timeout_s...), so a flag typed that
        //  way is taken too, as the same option (help shows the dashes)
        if (strchr(option->name, '-')) {
            char *name = underscored[count];
            snprintf(name, S_NAME_SIZE, "%s", option->name);
            for (char *c = name; (c = strchr(c, '-')) != NULL;)
                *c = '_';
            longopts[nlong++] = (struct option){name, has_arg, NULL, value};
        }
        count++;
    }
    longopts[nlong++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[nlong] = (struct option){0};

    //  "+" stops at the first word (the command); ":" reports a missing
    //  value apart from an unknown option; getopt itself prints nothing
    const char *optstring = stop_at_word ? "+:h" : ":h";
    opterr = 0;
    optind = 0; //  GNU getopt: 0 starts a new scan from scratch
    int c;
    while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
        if (c == 'h') {
            args->help = true;
            continue;
        }
        if (c == ':') {
            fprintf(stderr, "%s: option %s needs a value\n", prefix, argv[optind - 1]);
            fprintf(stderr, "Try \"%s --help\" for more information.\n", prefix);
            return FQ_CLI_EXIT_USAGE;
        }
        if (c == '?' || c < S_OPTION_BASE || c >= S_OPTION_BASE + (int)count) {
            const char *what = optopt && optopt < S_OPTION_BASE ? NULL : argv[optind - 1];
            if (what)
                fprintf(stderr, "%s: unknown option %s\n", prefix, what);
            else
                fprintf(stderr, "%s: unknown option -%c\n", prefix, optopt);
            fprintf(stderr, "Try \"%s --help\" for more information.\n", prefix);
            return FQ_CLI_EXIT_USAGE;
        }
        args->values[c - S_OPTION_BASE] = optarg ? optarg : "";
    }
    if (stop_at_word) {
        *next = optind;
        return 0;
    }
    for (int i = optind; i < argc; i++) {
        if (args->npos >= FQ_CLI_POSITIONAL_MAX) {
            fprintf(stderr, "%s: unexpected argument \"%s\"\n", prefix, argv[i]);
            return FQ_CLI_EXIT_USAGE;
        }
        args->pos[args->npos++] = argv[i];
    }
    return 0;
}

const char *fq_cli_arg(const fq_cli_args_t *args, const char *name)
{
    int i = s_find(args, name);
    return i < 0 ? NULL : args->values[i];
}

bool fq_cli_flag(const fq_cli_args_t *args, const char *name)
{
    return fq_cli_arg(args, name) != NULL;
}

//  strtoll over the whole text, decimal, no sign when !signed_ok. 0 or -1.
static int s_integer(const char *text, bool signed_ok, int64_t *value)
{
    if (!*text || (!signed_ok && (*text == '-' || *text == '+')) || *text == ' ')
        return -1;
    char *end;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    if (errno || *end)
        return -1;
    *value = n;
    return 0;
}

int fq_cli_parse_id(const char *text, const char *what, int64_t *id)
{
    int64_t n;
    if (s_integer(text, false, &n) != 0 || n <= 0) {
        fq_cli_error("invalid %s \"%s\" (a positive integer)", what, text);
        return FQ_CLI_EXIT_USAGE;
    }
    *id = n;
    return 0;
}

int fq_cli_parse_int(const char *text, const char *option, int64_t min, int64_t max, int64_t *value)
{
    int64_t n;
    if (s_integer(text, true, &n) != 0 || n < min || n > max) {
        fq_cli_error("invalid value for %s: \"%s\" (an integer in %lld..%lld)", option, text,
                     (long long)min, (long long)max);
        return FQ_CLI_EXIT_USAGE;
    }
    *value = n;
    return 0;
}

int fq_cli_parse_seconds(const char *text, const char *option, double min, double max,
                         double *value)
{
    char *end;
    errno = 0;
    double n = *text && *text != ' ' ? strtod(text, &end) : NAN;
    if (isnan(n) || errno || *end || n < min || n > max) {
        fq_cli_error("invalid value for %s: \"%s\" (seconds, %g..%g)", option, text, min, max);
        return FQ_CLI_EXIT_USAGE;
    }
    *value = n;
    return 0;
}

//  True when text starts as pattern says: 'd' a digit, 'T' the date-time
//  separator ('T', 't', or a space as RFC 3339 §5.6 allows), '+' a sign,
//  any other character itself.
static bool s_matches(const char *text, const char *pattern)
{
    for (size_t i = 0; pattern[i]; i++) {
        char c = text[i], p = pattern[i];
        bool ok = p == 'd'   ? c >= '0' && c <= '9'
                  : p == 'T' ? c == 'T' || c == 't' || c == ' '
                  : p == '+' ? c == '+' || c == '-'
                             : c == p;
        if (!ok)
            return false;
    }
    return true;
}

//  The Gregorian calendar's rule
static bool s_leap(int year)
{
    return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

bool fq_cli_rfc3339_valid(const char *text)
{
    //  YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), as RFC 3339 §5.6
    static const char date_time[] = "dddd-dd-ddTdd:dd:dd";
    static const char offset[] = "+dd:dd";
    static const int days[S_MONTHS] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int year, month, day, hour, minute, second;
    //  sscanf only reads what the pattern has shown to be digits
    if (!s_matches(text, date_time) || sscanf(text, "%4d-%2d-%2d%*c%2d:%2d:%2d", &year, &month,
                                              &day, &hour, &minute, &second) != S_DATE_TIME_FIELDS)
        return false;
    if (month < 1 || month > S_MONTHS || day < 1 || hour > S_HOUR_MAX || minute > S_MINUTE_MAX ||
        second > S_SECOND_MAX)
        return false;
    if (day > days[month - 1] + (month == S_FEBRUARY && s_leap(year)))
        return false;
    const char *t = text + sizeof date_time - 1;
    if (*t == '.') {
        t++;
        if (*t < '0' || *t > '9')
            return false;
        while (*t >= '0' && *t <= '9')
            t++;
    }
    if ((*t == 'Z' || *t == 'z') && t[1] == 0)
        return true;
    int zone_hour, zone_minute;
    return s_matches(t, offset) && t[sizeof offset - 1] == 0 &&
           sscanf(t + 1, "%2d:%2d", &zone_hour, &zone_minute) == S_OFFSET_FIELDS &&
           zone_hour <= S_HOUR_MAX && zone_minute <= S_MINUTE_MAX;
}

//  "N" and a unit (s, m, h, d; unit_required: or none, for seconds) of at
//  most S_RELATIVE_MAX_S, as seconds into *seconds. False when it is not.
static bool s_amount(const char *text, bool unit_required, int64_t *seconds)
{
    if (*text < '0' || *text > '9')
        return false;
    char *end;
    errno = 0;
    long long amount = strtoll(text, &end, 10);
    int64_t unit = *end == 's'                   ? 1
                   : *end == 'm'                 ? S_MINUTE_S
                   : *end == 'h'                 ? S_HOUR_S
                   : *end == 'd'                 ? S_DAY_S
                   : *end == 0 && !unit_required ? 1
                                                 : 0;
    if (errno || !unit || (*end && end[1]) || amount > S_RELATIVE_MAX_S / unit)
        return false;
    *seconds = amount * unit;
    return true;
}

int fq_cli_parse_duration(const char *text, const char *option, int64_t *seconds)
{
    if (s_amount(text, false, seconds))
        return 0;
    fq_cli_error("invalid value for %s: \"%s\" (N seconds, or N with s, m, h or d: 90m, 2d)",
                 option, text);
    return FQ_CLI_EXIT_USAGE;
}

int fq_cli_parse_time(const char *text, const char *option, int64_t now, json_t **value)
{
    int64_t n;
    *value = NULL;
    if (text[0] == '+') {
        //  "+N" and a unit
        if (s_amount(text + 1, true, &n))
            *value = json_integer(now + n);
    } else if (s_integer(text, false, &n) == 0)
        *value = json_integer(n);
    else if (fq_cli_rfc3339_valid(text))
        *value = json_string(text);
    if (!*value) {
        fq_cli_error("invalid value for %s: \"%s\" (an RFC 3339 time with a zone such as "
                     "2026-11-21T12:00:00Z, Unix seconds, or +N with s, m, h or d)",
                     option, text);
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

int fq_cli_parse_tenant(const char *text, const char *what)
{
    //  Checked here so that a typo is a usage error, not a 400
    if (!fq_tenant_name_valid(text)) {
        fq_cli_error("invalid %s \"%s\" (a lowercase letter or digit, then up to %d of "
                     "a-z 0-9 _ . -)",
                     what, text, FQ_TENANT_NAME_MAX - 1);
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

int fq_cli_tenant_path(const fq_cli_args_t *args, const char *resource, const char **tenant,
                       char *path, size_t size)
{
    *tenant = fq_cli_arg(args, "tenant");
    if (!*tenant) {
        fq_cli_error("which tenant? give --tenant NAME (the API names the tenant in its path, "
                     "and a token does not say which tenant it is)");
        return FQ_CLI_EXIT_USAGE;
    }
    if (fq_cli_parse_tenant(*tenant, "tenant"))
        return FQ_CLI_EXIT_USAGE;
    snprintf(path, size, "/v1/tenants/%s/%s", *tenant, resource);
    return 0;
}

int fq_cli_parse_choice(const char *text, const char *option, const char *const *choices)
{
    for (size_t i = 0; choices[i]; i++)
        if (strcmp(text, choices[i]) == 0)
            return 0;
    char list[S_CHOICES_SIZE] = "";
    size_t len = 0;
    for (size_t i = 0; choices[i] && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", choices[i]);
    fq_cli_error("invalid value for %s: \"%s\" (one of %s)", option, text, list);
    return FQ_CLI_EXIT_USAGE;
}

int fq_cli_parse_idempotency_key(const char *text)
{
    size_t len = strlen(text);
    bool ok = len >= 1 && len <= S_IDEMPOTENCY_KEY_MAX;
    for (size_t i = 0; ok && i < len; i++)
        ok = text[i] >= S_PRINTABLE_FIRST && text[i] <= S_PRINTABLE_LAST;
    if (!ok) {
        fq_cli_error("invalid value for --idempotency-key (1..%d printable ASCII characters)",
                     S_IDEMPOTENCY_KEY_MAX);
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}
