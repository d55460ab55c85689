/*  fq_config.c — the configuration engine (see fq_config.h). */
#include "fq_config.h"
#include "fq_buf.h"
#include "fq_error.h"
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

//  Longest line of a config file, in bytes. Far above any real setting (a
//  connection string is a few hundred bytes), and low enough that a file
//  that is no config file (a binary, a log) is refused at its first long
//  line instead of being read whole.
#define S_LINE_MAX 4096

//  How error messages quote user text (fq_config.h).
#define S_QUOTE_MAX   FQ_CONFIG_QUOTE_MAX
#define S_QUOTED_SIZE FQ_CONFIG_QUOTED_SIZE

//  No key is longer; a longer name is unknown without looking further.
#define S_KEY_MAX 64
//  Room for "flag --" and a key name as the user spelled it.
#define S_ORIGIN_SIZE (S_KEY_MAX + 16)

//  An unknown key gets a "did you mean" naming a known key at most this
//  many edits away: typos are one or two edits, more is another word.
#define S_SUGGEST_DISTANCE_MAX 2

//  What a masked secret shows instead.
#define S_MASK "********"

//  The byte order mark some editors write at the start of a UTF-8 file.
#define S_BOM "\xEF\xBB\xBF"

//  Prefixes of a libpq connection URI (the other form is key=value pairs).
static const char *const s_uri_prefixes[] = {"postgresql://", "postgres://"};

//  Keywords of a connection string whose values are secrets.
static const char *const s_secret_keywords[] = {"password", "sslpassword"};

typedef struct {
    char *text;       //  The value as given (a boolean or a choice: its canonical word)
    long long number; //  INT: the value; BOOL: 0 or 1; CHOICE: the word's index
    fq_config_source_t source;
    char *origin; //  "default", "config PATH:LINE", ...
} s_value_t;

struct fq_config {
    const fq_config_schema_t *schema; //  Static
    const fq_config_key_t *keys;      //  schema's
    int key_count;
    s_value_t *values; //  key_count of them
    fq_config_action_t action;
    int command;               //  FQ_CONFIG_COMMAND: its index in the schema
    const char *command_value; //  Its value, in argv, or NULL
    char *file;                //  The config file read, or NULL
};

//  A flag of the command line, kept until the file and environment are in.
typedef struct {
    int key;
    const char *value; //  Points into argv
    char origin[S_ORIGIN_SIZE];
} s_flag_t;

//  ---------------------------------------------------------------------
//  Error messages

//  Writes "origin: message" to error. Returns FQ_EINVAL.
static int s_vfail(char *error, size_t size, const char *origin, const char *format, va_list args)
{
    int len = snprintf(error, size, "%s: ", origin);
    if (len >= 0 && (size_t)len < size)
        vsnprintf(error + len, size - (size_t)len, format, args);
    return FQ_EINVAL;
}

static int s_fail(char *error, size_t size, const char *origin, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
static int s_fail(char *error, size_t size, const char *origin, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int rc = s_vfail(error, size, origin, format, args);
    va_end(args);
    return rc;
}

static int s_no_memory(char *error, size_t size)
{
    snprintf(error, size, "out of memory");
    return FQ_ENOMEM;
}

//  Writes text (len bytes) to out in double quotes, fit for a terminal:
//  quotes and backslashes escaped, control bytes as \xNN, cut after
//  S_QUOTE_MAX bytes with "...". Returns out.
static const char *s_quote_n(char *out, const char *text, size_t len)
{
    char *p = out;
    *p++ = '"';
    for (size_t i = 0; i < len && i < S_QUOTE_MAX; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
        } else if (c < ' ' || c == 0x7f)
            p += sprintf(p, "\\x%02x", c);
        else
            *p++ = (char)c;
    }
    if (len > S_QUOTE_MAX)
        p += sprintf(p, "...");
    *p++ = '"';
    *p = 0;
    return out;
}

static const char *s_quote(char *out, const char *text)
{
    return s_quote_n(out, text, strlen(text));
}

//  ---------------------------------------------------------------------
//  Keys

//  True if a and b are one character of a name: equal, or '-' and '_'.
static bool s_same_char(char a, char b)
{
    return a == b || ((a == '-' || a == '_') && (b == '-' || b == '_'));
}

//  The key named name (len bytes; '-' may stand for '_'), or -1.
static int s_lookup(fq_config_t *self, const char *name, size_t len)
{
    if (len > S_KEY_MAX)
        return -1;
    for (int key = 0; key < self->key_count; key++) {
        const char *known = self->keys[key].name;
        if (strlen(known) != len)
            continue;
        size_t i = 0;
        while (i < len && s_same_char(name[i], known[i]))
            i++;
        if (i == len)
            return key;
    }
    return -1;
}

//  True if name (len bytes) is word, with '-' and '_' alike.
static bool s_name_is(const char *name, size_t len, const char *word)
{
    if (strlen(word) != len)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!s_same_char(name[i], word[i]))
            return false;
    return true;
}

//  Edit distance between a and b (both at most S_KEY_MAX bytes), counting
//  a swap of two neighbours as one edit ("databse" is one from "database").
static size_t s_distance(const char *a, size_t alen, const char *b, size_t blen)
{
    //  Three rows of the matrix, rotating: row i lives in rows[i % 3]
    size_t rows[3][S_KEY_MAX + 1];
    for (size_t j = 0; j <= blen; j++)
        rows[0][j] = j;
    for (size_t i = 1; i <= alen; i++) {
        size_t *row = rows[i % 3], *up = rows[(i - 1) % 3], *two_up = rows[(i + 1) % 3];
        row[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            bool same = s_same_char(a[i - 1], b[j - 1]);
            size_t best = up[j - 1] + (same ? 0 : 1);
            if (up[j] + 1 < best)
                best = up[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                two_up[j - 2] + 1 < best)
                best = two_up[j - 2] + 1;
            row[j] = best;
        }
    }
    return rows[alen % 3][blen];
}

//  The known key closest to name, if it is close enough to be a typo.
static const char *s_suggest(fq_config_t *self, const char *name, size_t len)
{
    if (len > S_KEY_MAX)
        return NULL;
    const char *best = NULL;
    size_t best_distance = S_SUGGEST_DISTANCE_MAX + 1;
    for (int key = 0; key < self->key_count; key++) {
        const char *known = self->keys[key].name;
        size_t distance = s_distance(name, len, known, strlen(known));
        if (distance < best_distance) {
            best = known;
            best_distance = distance;
        }
    }
    return best;
}

static int s_unknown_key(fq_config_t *self, char *error, size_t size, const char *origin,
                         const char *name, size_t len)
{
    char quoted[S_QUOTED_SIZE];
    s_quote_n(quoted, name, len);
    const char *suggestion = s_suggest(self, name, len);
    if (suggestion)
        return s_fail(error, size, origin, "unknown key %s (did you mean \"%s\"?)", quoted,
                      suggestion);
    return s_fail(error, size, origin, "unknown key %s", quoted);
}

//  ---------------------------------------------------------------------
//  Values

//  Whether a type's values are text, kept as given.
static bool s_is_text(fq_config_type_t type)
{
    return type == FQ_CONFIG_TYPE_STRING || type == FQ_CONFIG_TYPE_CONNINFO ||
           type == FQ_CONFIG_TYPE_SECRET;
}

//  The words of a boolean, true ones at even indexes.
static const char *const s_bool_words[] = {"true", "false", "yes", "no", "on", "off", "1", "0"};

//  Checks text against key's type. Returns 0 with the number (INT, BOOL)
//  and the canonical text (BOOL, CHOICE: static storage; others: text),
//  or FQ_EINVAL.
static int s_parse(const fq_config_key_t *k, const char *text, long long *number,
                   const char **canonical, const char *origin, char *error, size_t size)
{
    char quoted[S_QUOTED_SIZE];
    *number = 0;
    *canonical = text;
    if (s_is_text(k->type))
        return 0;
    if (!*text)
        return s_fail(error, size, origin, "missing value for \"%s\"", k->name);
    if (k->type == FQ_CONFIG_TYPE_INT) {
        const char *digits = text + (text[0] == '-' || text[0] == '+');
        char *end;
        errno = 0;
        long long value = strtoll(text, &end, 10);
        if (!isdigit((unsigned char)*digits) || *end)
            return s_fail(error, size, origin, "invalid value for \"%s\": %s is not an integer",
                          k->name, s_quote(quoted, text));
        if (errno == ERANGE || value < k->min || value > k->max) {
            int shown = (int)strnlen(text, S_QUOTE_MAX);
            return s_fail(error, size, origin,
                          "invalid value for \"%s\": %.*s%s is out of range (%lld..%lld)", k->name,
                          shown, text, text[shown] ? "..." : "", k->min, k->max);
        }
        *number = value;
        return 0;
    }
    if (k->type == FQ_CONFIG_TYPE_BOOL) {
        for (size_t i = 0; i < sizeof s_bool_words / sizeof s_bool_words[0]; i++)
            if (strcasecmp(text, s_bool_words[i]) == 0) {
                *number = i % 2 == 0;
                *canonical = *number ? "true" : "false";
                return 0;
            }
        return s_fail(error, size, origin,
                      "invalid value for \"%s\": %s is not a boolean (true/false, yes/no, "
                      "on/off, 1/0)",
                      k->name, s_quote(quoted, text));
    }
    //  A choice: one word of "a|b|c", in any case; kept as the table spells it
    assert(k->type == FQ_CONFIG_TYPE_CHOICE);
    size_t len = strlen(text);
    long long index = 0;
    for (const char *word = k->choices; *word; index++) {
        size_t word_len = strcspn(word, "|");
        if (word_len == len && strncasecmp(word, text, len) == 0) {
            *canonical = word;
            *number = index;
            return 0;
        }
        word += word_len + (word[word_len] == '|');
    }
    return s_fail(error, size, origin, "invalid value for \"%s\": %s is not one of %s", k->name,
                  s_quote(quoted, text), k->choices);
}

//  Sets key from text. Returns 0, FQ_EINVAL or FQ_ENOMEM (with error).
static int s_set(fq_config_t *self, int key, const char *text, fq_config_source_t source,
                 const char *origin, char *error, size_t size)
{
    long long number;
    const char *canonical;
    const fq_config_key_t *k = &self->keys[key];
    int rc = s_parse(k, text, &number, &canonical, origin, error, size);
    if (rc)
        return rc;
    size_t canonical_len =
        k->type == FQ_CONFIG_TYPE_CHOICE ? strcspn(canonical, "|") : strlen(canonical);
    char *copy = strndup(canonical, canonical_len);
    char *origin_copy = strdup(origin);
    if (!copy || !origin_copy) {
        free(copy);
        free(origin_copy);
        return s_no_memory(error, size);
    }
    s_value_t *value = &self->values[key];
    free(value->text);
    free(value->origin);
    *value = (s_value_t){.text = copy, .number = number, .source = source, .origin = origin_copy};
    return 0;
}

static void s_clear(fq_config_t *self)
{
    for (int key = 0; key < self->key_count; key++) {
        free(self->values[key].text);
        free(self->values[key].origin);
        self->values[key] = (s_value_t){0};
    }
    free(self->file);
    self->file = NULL;
    self->action = FQ_CONFIG_RUN;
    self->command = -1;
    self->command_value = NULL;
}

//  Sets every key to its default. Returns 0 or FQ_ENOMEM.
static int s_defaults(fq_config_t *self)
{
    s_clear(self);
    for (int key = 0; key < self->key_count; key++) {
        char error[S_QUOTED_SIZE * 2];
        int rc = s_set(self, key, self->keys[key].def, FQ_CONFIG_FROM_DEFAULT, "default", error,
                       sizeof error);
        //  A default the table's own parser refuses is a bug in the table
        assert(rc != FQ_EINVAL);
        if (rc)
            return rc;
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  The config file

typedef enum { S_LINE_OK, S_LINE_END, S_LINE_TOO_LONG, S_LINE_NUL } s_line_t;

//  Reads one line (without its newline) into line, at most S_LINE_MAX
//  bytes. S_LINE_END at the end of the file or on a read error.
static s_line_t s_read_line(FILE *file, char line[S_LINE_MAX + 1])
{
    size_t len = 0;
    bool nul = false;
    int c;
    while ((c = getc(file)) != EOF && c != '\n') {
        if (len == S_LINE_MAX)
            return S_LINE_TOO_LONG;
        nul |= c == 0;
        line[len++] = (char)c;
    }
    line[len] = 0;
    if (c == EOF && len == 0)
        return S_LINE_END;
    return nul ? S_LINE_NUL : S_LINE_OK;
}

static char *s_skip_blanks(char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static bool s_blank(char c)
{
    return c == ' ' || c == '\t';
}

//  Parses one line of the file (see fq_config.h). first_line holds the
//  line each key was first set on (0: not yet).
static int s_parse_line(fq_config_t *self, char *line, int number, const char *origin,
                        int first_line[], char *error, size_t size)
{
    size_t len = strlen(line);
    if (len && line[len - 1] == '\r') //  A file written on Windows
        line[--len] = 0;
    char *p = line;
    if (number == 1 && strncmp(p, S_BOM, strlen(S_BOM)) == 0)
        p += strlen(S_BOM);
    p = s_skip_blanks(p);
    if (!*p || *p == '#')
        return 0;
    char *equals = strchr(p, '=');
    if (!equals)
        return s_fail(error, size, origin, "expected \"key = value\" but the line has no \"=\"");
    char *key_end = equals;
    while (key_end > p && s_blank(key_end[-1]))
        key_end--;
    if (key_end == p)
        return s_fail(error, size, origin, "missing key before \"=\"");
    int key = s_lookup(self, p, (size_t)(key_end - p));
    if (key < 0)
        return s_unknown_key(self, error, size, origin, p, (size_t)(key_end - p));
    const char *name = self->keys[key].name;
    if (first_line[key])
        return s_fail(error, size, origin, "duplicate key \"%s\" (first set on line %d)", name,
                      first_line[key]);
    first_line[key] = number;

    char *value = s_skip_blanks(equals + 1);
    if (*value == '"') {
        //  Unquote in place: the text only ever shrinks
        char *in = value + 1, *out = value;
        while (*in && *in != '"') {
            if (*in == '\\' && (in[1] == '"' || in[1] == '\\'))
                in++;
            *out++ = *in++;
        }
        if (*in != '"')
            return s_fail(error, size, origin, "value of \"%s\" has no closing quote", name);
        *out = 0;
        char *rest = s_skip_blanks(in + 1);
        if (*rest && *rest != '#')
            return s_fail(error, size, origin, "unexpected text after the closing quote of \"%s\"",
                          name);
    } else {
        //  A '#' starts a comment at the start of the value or after a blank,
        //  so that "password=a#b" keeps its '#'
        char *end = value;
        while (*end && !(*end == '#' && (end == value || s_blank(end[-1]))))
            end++;
        while (end > value && s_blank(end[-1]))
            end--;
        *end = 0;
        if (!*value)
            return s_fail(error, size, origin, "missing value for \"%s\"", name);
    }
    return s_set(self, key, value, FQ_CONFIG_FROM_FILE, origin, error, size);
}

static int s_load_file(fq_config_t *self, const char *path, char *error, size_t size)
{
    char *origin = NULL;
    if (asprintf(&origin, "config %s", path) < 0)
        return s_no_memory(error, size);
    FILE *file = fopen(path, "re");
    if (!file) {
        int rc = s_fail(error, size, origin, "could not open: %s", strerror(errno));
        free(origin);
        return rc;
    }
    char *line = malloc(S_LINE_MAX + 1);
    int *first_line = calloc((size_t)self->key_count, sizeof *first_line);
    if (!line || !first_line) {
        fclose(file);
        free(line);
        free(first_line);
        free(origin);
        return s_no_memory(error, size);
    }
    int rc = 0;
    for (int number = 1; rc == 0; number++) {
        s_line_t status = s_read_line(file, line);
        if (status == S_LINE_END)
            break;
        char *where = NULL;
        if (asprintf(&where, "%s:%d", origin, number) < 0) {
            rc = s_no_memory(error, size);
            break;
        }
        if (status == S_LINE_TOO_LONG)
            rc = s_fail(error, size, where, "line is longer than %d bytes", S_LINE_MAX);
        else if (status == S_LINE_NUL)
            rc = s_fail(error, size, where, "line holds a NUL byte (not a text file?)");
        else
            rc = s_parse_line(self, line, number, where, first_line, error, size);
        free(where);
    }
    if (rc == 0 && ferror(file))
        rc = s_fail(error, size, origin, "could not read: %s", strerror(errno));
    fclose(file);
    free(line);
    free(first_line);
    free(origin);
    return rc;
}

//  ---------------------------------------------------------------------
//  Environment and command line

//  The value of variable name in envp (NULL: the process's environment).
static const char *s_env_get(char *const envp[], const char *name)
{
    if (!envp)
        return getenv(name);
    size_t len = strlen(name);
    for (; *envp; envp++)
        if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
            return *envp + len + 1;
    return NULL;
}

//  True for an argument that is a flag ("--x"), not a value.
static bool s_is_flag(const char *arg)
{
    return strncmp(arg, "--", 2) == 0;
}

//  True if argv holds arg itself (--help, --version: no value, anywhere).
static bool s_has_arg(int argc, char *const argv[], const char *arg, const char *alias)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], arg) == 0 || (alias && strcmp(argv[i], alias) == 0))
            return true;
    return false;
}

//  The schema's command named name (len bytes), or -1.
static int s_lookup_command(fq_config_t *self, const char *name, size_t len)
{
    for (int i = 0; i < self->schema->command_count; i++)
        if (s_name_is(name, len, self->schema->commands[i].name))
            return i;
    return -1;
}

//  Reads argv into flags (the settings, in order), the config file path
//  and the action.
static int s_parse_args(fq_config_t *self, int argc, char *const argv[], s_flag_t *flags,
                        int *nflags, const char **config_path, char *error, size_t size)
{
    char quoted[S_QUOTED_SIZE];
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!s_is_flag(arg) || !arg[2]) {
            char origin[S_QUOTED_SIZE + 16];
            snprintf(origin, sizeof origin, "argument %s", s_quote(quoted, arg));
            return s_fail(error, size, origin, "unexpected (settings are --key=value)");
        }
        const char *name = arg + 2;
        const char *equals = strchr(name, '=');
        size_t len = equals ? (size_t)(equals - name) : strlen(name);
        const char *value = equals ? equals + 1 : NULL;
        char origin[S_ORIGIN_SIZE];
        snprintf(origin, sizeof origin, "flag --%.*s", (int)len, name);
        int command = s_lookup_command(self, name, len);
        bool takes_value = command < 0 || self->schema->commands[command].placeholder;
        if (s_name_is(name, len, "print_config") || s_name_is(name, len, "version") ||
            !takes_value) {
            if (value)
                return s_fail(error, size, origin, "takes no value");
            if (command >= 0) {
                self->action = FQ_CONFIG_COMMAND;
                self->command = command;
            } else if (s_name_is(name, len, "print_config"))
                self->action = FQ_CONFIG_PRINT;
            continue;
        }
        if (!value && i + 1 < argc && !s_is_flag(argv[i + 1]))
            value = argv[++i];
        if (command >= 0) {
            if (!value || !*value)
                return s_fail(error, size, origin, "missing value (%s)",
                              self->schema->commands[command].placeholder);
            self->action = FQ_CONFIG_COMMAND;
            self->command = command;
            self->command_value = value;
            continue;
        }
        if (s_name_is(name, len, "config")) {
            if (*config_path)
                return s_fail(error, size, origin, "given more than once");
            if (!value || !*value)
                return s_fail(error, size, origin, "missing value (the config file's path)");
            *config_path = value;
            continue;
        }
        int key = s_lookup(self, name, len);
        if (key < 0)
            return s_unknown_key(self, error, size, origin, name, len);
        if (!value && self->keys[key].type == FQ_CONFIG_TYPE_BOOL)
            value = "true"; //  --gateway-insecure alone
        if (!value)
            return s_fail(error, size, origin, "missing value for \"%s\"", self->keys[key].name);
        s_flag_t *flag = &flags[(*nflags)++];
        flag->key = key;
        flag->value = value;
        snprintf(flag->origin, sizeof flag->origin, "%s", origin);
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Checks between keys

static const char *s_times(int factor)
{
    return factor == 1 ? "" : factor == 2 ? "twice " : "a multiple of ";
}

//  Only asserts use it: inline, so a release build (NDEBUG) does not warn
static inline bool s_key_valid(fq_config_t *self, int key)
{
    return key >= 0 && key < self->key_count;
}

int fq_config_check_at_least(fq_config_t *self, int upper, int lower, int factor, char *error,
                             size_t size)
{
    assert(s_key_valid(self, upper) && s_key_valid(self, lower));
    const s_value_t *u = &self->values[upper], *l = &self->values[lower];
    if (u->number >= factor * l->number)
        return 0;
    const char *blame = l->source > u->source ? l->origin : u->origin;
    return s_fail(error, size, blame, "%s = %lld (%s) must be at least %s%s = %lld (%s)",
                  self->keys[upper].name, u->number, u->origin, s_times(factor),
                  self->keys[lower].name, l->number, l->origin);
}

int fq_config_error(fq_config_t *self, int key, char *error, size_t size, const char *format, ...)
{
    assert(s_key_valid(self, key));
    va_list args;
    va_start(args, format);
    int rc = s_vfail(error, size, self->values[key].origin, format, args);
    va_end(args);
    return rc;
}

const char *fq_config_quote(char out[FQ_CONFIG_QUOTED_SIZE], const char *text)
{
    return s_quote(out, text);
}

//  ---------------------------------------------------------------------
//  Public API

fq_config_t *fq_config_new(const fq_config_schema_t *schema)
{
    assert(schema && schema->keys && schema->key_count > 0);
    fq_config_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->schema = schema;
    self->keys = schema->keys;
    self->key_count = schema->key_count;
    self->values = calloc((size_t)schema->key_count, sizeof *self->values);
    if (!self->values || s_defaults(self) != 0)
        fq_config_destroy(&self);
    return self;
}

void fq_config_destroy(fq_config_t **self_p)
{
    fq_config_t *self = *self_p;
    if (!self)
        return;
    if (self->values)
        s_clear(self);
    free(self->values);
    free(self);
    *self_p = NULL;
}

int fq_config_load(fq_config_t *self, int argc, char *const argv[], char *const envp[], char *error,
                   size_t size)
{
    int rc = s_defaults(self);
    if (rc)
        return s_no_memory(error, size);
    //  Help is what someone lost needs: nothing else is looked at; nor
    //  for the version, which someone wants whatever else is wrong
    if (s_has_arg(argc, argv, "--help", "-h")) {
        self->action = FQ_CONFIG_HELP;
        return 0;
    }
    if (s_has_arg(argc, argv, "--version", NULL)) {
        self->action = FQ_CONFIG_VERSION;
        return 0;
    }
    s_flag_t *flags = calloc(argc > 0 ? (size_t)argc : 1, sizeof *flags);
    if (!flags)
        return s_no_memory(error, size);
    int nflags = 0;
    const char *config_path = NULL;
    rc = s_parse_args(self, argc, argv, flags, &nflags, &config_path, error, size);
    //  A command does something else than run: its flags are checked,
    //  the rest of the settings are not its business
    bool command = self->action == FQ_CONFIG_COMMAND;
    if (rc == 0 && !command && !config_path) {
        config_path = s_env_get(envp, self->schema->env_file);
        if (config_path && !*config_path) //  Set but empty: no file
            config_path = NULL;
    }
    if (rc == 0 && !command && config_path) {
        self->file = strdup(config_path);
        rc = self->file ? s_load_file(self, config_path, error, size) : s_no_memory(error, size);
    }
    for (int key = 0; rc == 0 && !command && key < self->key_count; key++) {
        const char *value = s_env_get(envp, self->keys[key].env);
        if (value) {
            char origin[S_ORIGIN_SIZE];
            snprintf(origin, sizeof origin, "environment %s", self->keys[key].env);
            rc = s_set(self, key, value, FQ_CONFIG_FROM_ENV, origin, error, size);
        }
    }
    for (int i = 0; rc == 0 && i < nflags; i++)
        rc = s_set(self, flags[i].key, flags[i].value, FQ_CONFIG_FROM_FLAG, flags[i].origin, error,
                   size);
    free(flags);
    if (rc == 0 && !command && self->schema->check)
        rc = self->schema->check(self, error, size);
    return rc;
}

fq_config_action_t fq_config_action(fq_config_t *self)
{
    return self->action;
}

int fq_config_command(fq_config_t *self, const char **value)
{
    if (value)
        *value = self->action == FQ_CONFIG_COMMAND ? self->command_value : NULL;
    return self->action == FQ_CONFIG_COMMAND ? self->command : -1;
}

const char *fq_config_file(fq_config_t *self)
{
    return self->file;
}

const char *fq_config_str(fq_config_t *self, int key)
{
    assert(s_key_valid(self, key));
    assert(self->keys[key].type != FQ_CONFIG_TYPE_INT &&
           self->keys[key].type != FQ_CONFIG_TYPE_BOOL);
    return self->values[key].text;
}

int fq_config_int(fq_config_t *self, int key)
{
    assert(s_key_valid(self, key));
    assert(self->keys[key].type == FQ_CONFIG_TYPE_INT);
    return (int)self->values[key].number;
}

bool fq_config_bool(fq_config_t *self, int key)
{
    assert(s_key_valid(self, key));
    assert(self->keys[key].type == FQ_CONFIG_TYPE_BOOL);
    return self->values[key].number != 0;
}

fq_config_source_t fq_config_source(fq_config_t *self, int key)
{
    assert(s_key_valid(self, key));
    return self->values[key].source;
}

const char *fq_config_origin(fq_config_t *self, int key)
{
    assert(s_key_valid(self, key));
    return self->values[key].origin;
}

const char *fq_config_key_name(fq_config_t *self, int key)
{
    assert(s_key_valid(self, key));
    return self->keys[key].name;
}

const char *fq_config_key_env(fq_config_t *self, int key)
{
    assert(s_key_valid(self, key));
    return self->keys[key].env;
}

bool fq_config_equal(fq_config_t *self, fq_config_t *other, int key)
{
    assert(self->schema == other->schema && s_key_valid(self, key));
    const s_value_t *a = &self->values[key], *b = &other->values[key];
    //  Numbers by value ("010" is 10), text as it is
    if (s_is_text(self->keys[key].type))
        return strcmp(a->text, b->text) == 0;
    return a->number == b->number;
}

int fq_config_adopt(fq_config_t *self, fq_config_t *from, int key)
{
    assert(self->schema == from->schema && s_key_valid(self, key));
    const s_value_t *source = &from->values[key];
    char *text = strdup(source->text), *origin = strdup(source->origin);
    if (!text || !origin) {
        free(text);
        free(origin);
        return FQ_ENOMEM;
    }
    s_value_t *value = &self->values[key];
    free(value->text);
    free(value->origin);
    *value = (s_value_t){
        .text = text, .number = source->number, .source = source->source, .origin = origin};
    return 0;
}

//  ---------------------------------------------------------------------
//  Masking secrets

static bool s_is_secret(const char *keyword, size_t len)
{
    for (size_t i = 0; i < sizeof s_secret_keywords / sizeof s_secret_keywords[0]; i++)
        if (strlen(s_secret_keywords[i]) == len && strncmp(keyword, s_secret_keywords[i], len) == 0)
            return true;
    return false;
}

//  Masks a URI: the password of its user info, and password parameters.
static void s_mask_uri(const char *uri, size_t prefix_len, fq_buf_t *out)
{
    fq_buf_add(out, uri, prefix_len);
    const char *p = uri + prefix_len;
    size_t authority_len = strcspn(p, "/?");
    const char *at = memchr(p, '@', authority_len);
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            fq_buf_add(out, p, (size_t)(colon - p) + 1);
            fq_buf_add_str(out, S_MASK);
            p = at;
        }
    }
    const char *query = strchr(p, '?');
    if (!query) {
        fq_buf_add(out, p, strlen(p));
        return;
    }
    fq_buf_add(out, p, (size_t)(query - p) + 1);
    p = query + 1;
    while (*p) {
        size_t param_len = strcspn(p, "&");
        size_t name_len = strcspn(p, "=&");
        if (p[name_len] == '=' && s_is_secret(p, name_len)) {
            fq_buf_add(out, p, name_len + 1);
            fq_buf_add_str(out, S_MASK);
        } else
            fq_buf_add(out, p, param_len);
        p += param_len;
        if (*p == '&')
            fq_buf_add(out, p++, 1);
    }
}

//  Masks keyword=value pairs, read as libpq reads them. Returns false if
//  the text is not a connection string libpq would accept.
static bool s_mask_pairs(const char *p, fq_buf_t *out)
{
    while (*p) {
        const char *start = p;
        while (isspace((unsigned char)*p))
            p++;
        const char *keyword = p;
        while (*p && *p != '=' && !isspace((unsigned char)*p))
            p++;
        size_t keyword_len = (size_t)(p - keyword);
        while (isspace((unsigned char)*p))
            p++;
        if (keyword_len == 0 && !*p) {
            fq_buf_add(out, start, (size_t)(p - start));
            return true;
        }
        if (keyword_len == 0 || *p != '=')
            return false;
        p++;
        while (isspace((unsigned char)*p))
            p++;
        const char *value = p;
        if (*p == '\'') {
            for (p++; *p && *p != '\''; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (*p != '\'')
                return false;
            p++;
        } else
            for (; *p && !isspace((unsigned char)*p); p++)
                if (*p == '\\' && p[1])
                    p++;
        fq_buf_add(out, start, (size_t)(value - start));
        if (s_is_secret(keyword, keyword_len))
            fq_buf_add_str(out, S_MASK);
        else
            fq_buf_add(out, value, (size_t)(p - value));
    }
    return true;
}

//  conninfo with its secrets masked; a string libpq could not read is
//  masked whole (it might hold a password anywhere). Caller frees; NULL
//  when memory runs out.
static char *s_mask_conninfo(const char *conninfo)
{
    //  Room for all the masking writes at once, so that none of them can
    //  fail: never more than twice the input plus a mask (each masked
    //  value, however short, follows at least "password=")
    fq_buf_t out = {0};
    if (fq_buf_reserve(&out, 2 * strlen(conninfo) + sizeof S_MASK))
        return NULL;
    fq_buf_reset(&out); //  "" until written: reserve alone writes no NUL
    bool uri = false;
    for (size_t i = 0; i < sizeof s_uri_prefixes / sizeof s_uri_prefixes[0] && !uri; i++)
        if (strncmp(conninfo, s_uri_prefixes[i], strlen(s_uri_prefixes[i])) == 0) {
            s_mask_uri(conninfo, strlen(s_uri_prefixes[i]), &out);
            uri = true;
        }
    if (!uri && !s_mask_pairs(conninfo, &out)) {
        fq_buf_reset(&out);
        fq_buf_add_str(&out, S_MASK);
    }
    return fq_buf_take(&out);
}

char *fq_config_shown(fq_config_t *self, int key)
{
    assert(s_key_valid(self, key));
    const char *text = self->values[key].text;
    switch (self->keys[key].type) {
    case FQ_CONFIG_TYPE_CONNINFO:
        return s_mask_conninfo(text);
    case FQ_CONFIG_TYPE_SECRET:
        //  Empty says that none is set, which is no secret
        return strdup(*text ? S_MASK : "");
    default:
        return strdup(text);
    }
}

//  ---------------------------------------------------------------------
//  Printing

//  Writes text in double quotes, as the file parser reads it back.
static void s_print_quoted(FILE *out, const char *text)
{
    fputc('"', out);
    for (; *text; text++) {
        if (*text == '"' || *text == '\\')
            fputc('\\', out);
        fputc(*text, out);
    }
    fputc('"', out);
}

//  Writes text with control bytes as '?', so it stays on its line.
static void s_print_line_safe(FILE *out, const char *text)
{
    for (; *text; text++)
        fputc((unsigned char)*text < ' ' ? '?' : *text, out);
}

void fq_config_print(fq_config_t *self, FILE *out)
{
    fprintf(out, "# %s configuration: every key, its effective value and its source\n",
            self->schema->program);
    if (self->file) {
        fprintf(out, "# config file: ");
        s_print_line_safe(out, self->file);
        fputc('\n', out);
    }
    for (int key = 0; key < self->key_count; key++) {
        const fq_config_key_t *k = &self->keys[key];
        const s_value_t *value = &self->values[key];
        fprintf(out, "%s = ", k->name);
        if (k->type == FQ_CONFIG_TYPE_INT)
            fprintf(out, "%lld", value->number);
        else if (k->type == FQ_CONFIG_TYPE_BOOL || k->type == FQ_CONFIG_TYPE_CHOICE)
            fprintf(out, "%s", value->text);
        else {
            char *shown = fq_config_shown(self, key);
            s_print_quoted(out, shown ? shown : S_MASK);
            free(shown);
        }
        fprintf(out, "  # ");
        s_print_line_safe(out, value->origin);
        fputc('\n', out);
    }
}

//  What a flag's value looks like in the help text.
static void s_print_placeholder(FILE *out, const fq_config_key_t *k)
{
    switch (k->type) {
    case FQ_CONFIG_TYPE_STRING:
    case FQ_CONFIG_TYPE_SECRET:
        fprintf(out, "TEXT");
        break;
    case FQ_CONFIG_TYPE_CONNINFO:
        fprintf(out, "CONNINFO");
        break;
    case FQ_CONFIG_TYPE_INT:
        fprintf(out, "%lld..%lld", k->min, k->max);
        break;
    case FQ_CONFIG_TYPE_BOOL:
        fprintf(out, "true|false");
        break;
    case FQ_CONFIG_TYPE_CHOICE:
        fprintf(out, "%s", k->choices);
        break;
    }
}

//  Writes "--name" as the help shows a flag: with dashes.
static void s_print_flag(FILE *out, const char *name)
{
    fputs("--", out);
    for (; *name; name++)
        fputc(*name == '_' ? '-' : *name, out);
}

void fq_config_help(fq_config_t *self, FILE *out)
{
    const fq_config_schema_t *schema = self->schema;
    const char *program = schema->program;
    fprintf(out,
            "usage: %s %s\n"
            "       %s [...] --print-config   print every setting and its source, then exit\n"
            "       %s --version              print the version, then exit\n"
            "       %s --help                 print this help, then exit\n",
            program, schema->synopsis, program, program, program);
    for (int i = 0; i < schema->command_count; i++) {
        const fq_config_command_t *command = &schema->commands[i];
        fprintf(out, "       %s ", program);
        s_print_flag(out, command->name);
        if (command->placeholder)
            fprintf(out, " %s", command->placeholder);
        fprintf(out, "\n           %s\n", command->help);
    }
    fprintf(out,
            "\n"
            "Each setting comes from, in increasing precedence:\n"
            "  its default\n"
            "  the config file   --config PATH or %s; \"key = value\" lines, '#' comments\n"
            "  the environment   %sKEY\n"
            "  the command line  --key=VALUE or --key VALUE (a boolean alone means true)\n"
            "Flags are spelled with dashes, as below; an underscore may stand for a dash\n"
            "(--some_key is --some-key). Keys in the file are written with underscores.\n"
            "\n"
            "Settings:\n",
            schema->env_file, schema->env_prefix);
    for (int key = 0; key < self->key_count; key++) {
        const fq_config_key_t *k = &self->keys[key];
        fputs("  ", out);
        s_print_flag(out, k->name);
        fputc('=', out);
        s_print_placeholder(out, k);
        fprintf(out, "  (%s, default ", k->env);
        if (s_is_text(k->type))
            s_print_quoted(out, k->def);
        else
            fprintf(out, "%s", k->def);
        fprintf(out, ")\n      %s\n", k->help);
    }
}
