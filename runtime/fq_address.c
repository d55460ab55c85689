/*  fq_address.c — path and address validation. */
#include "fq_address.h"
#include "fq_error.h"
#include <string.h>

static bool s_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

bool fq_name_valid(const char *name)
{
    size_t len = 0;
    if (!name || !*name)
        return false;
    for (; name[len]; len++)
        if (!s_name_char(name[len]) || len >= FQ_NAME_MAX)
            return false;
    //  "." and ".." would read as relative paths in logs and tools
    return strcmp(name, ".") && strcmp(name, "..");
}

bool fq_path_valid(const char *path)
{
    if (!path || path[0] != '/' || strlen(path) > FQ_PATH_MAX)
        return false;
    const char *segment = path + 1;
    while (true) {
        const char *slash = strchr(segment, '/');
        size_t len = slash ? (size_t)(slash - segment) : strlen(segment);
        char name[FQ_NAME_MAX + 1];
        if (len == 0 || len > FQ_NAME_MAX)
            return false;
        memcpy(name, segment, len);
        name[len] = 0;
        if (!fq_name_valid(name))
            return false;
        if (!slash)
            return true;
        segment = slash + 1;
    }
}

//  A tcp endpoint's host:port part: a host of printable characters (no
//  spaces or slashes) and a port from 1 to 65535.
static bool s_endpoint_valid(const char *host, size_t len)
{
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++) {
        if (host[i] <= ' ' || host[i] > '~' || host[i] == '/')
            return false;
        if (host[i] == ':')
            colon = host + i;
    }
    if (!colon || colon == host)
        return false;
    size_t digits = len - (size_t)(colon + 1 - host);
    if (digits == 0 || digits > 5)
        return false;
    long port = 0;
    for (const char *d = colon + 1; d < host + len; d++) {
        if (*d < '0' || *d > '9')
            return false;
        port = port * 10 + (*d - '0');
    }
    return port >= 1 && port <= 65535;
}

int fq_address_split(const char *address, char *system, size_t system_size, const char **path)
{
    if (!address || strlen(address) > FQ_ADDRESS_MAX || system_size == 0)
        return FQ_EINVAL;
    if (address[0] == '/') {
        if (!fq_path_valid(address))
            return FQ_EINVAL;
        system[0] = 0;
        *path = address;
        return 0;
    }
    bool by_name = strncmp(address, "fq://", 5) == 0;
    bool by_endpoint = strncmp(address, "tcp://", 6) == 0;
    if (!by_name && !by_endpoint)
        return FQ_EINVAL;
    const char *host = address + (by_name ? 5 : 6);
    const char *slash = strchr(host, '/');
    if (!slash || !fq_path_valid(slash))
        return FQ_EINVAL;
    size_t host_len = (size_t)(slash - host);
    size_t system_len = (size_t)(slash - address);
    if (system_len + 1 > system_size)
        return FQ_EINVAL;
    if (by_name) {
        char name[FQ_NAME_MAX + 1];
        if (host_len == 0 || host_len > FQ_NAME_MAX)
            return FQ_EINVAL;
        memcpy(name, host, host_len);
        name[host_len] = 0;
        if (!fq_name_valid(name))
            return FQ_EINVAL;
    } else if (!s_endpoint_valid(host, host_len))
        return FQ_EINVAL;
    //  Only a valid address fills the caller's buffer
    memcpy(system, address, system_len);
    system[system_len] = 0;
    *path = slash;
    return 1;
}
