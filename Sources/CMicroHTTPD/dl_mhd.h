// Typed stand-ins for libmicrohttpd's variadic calls, which Swift cannot call
// directly, and its constants that are macros Swift does not import.
#ifndef DL_MHD_H
#define DL_MHD_H
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

typedef enum MHD_Result (*dl_mhd_handler)(void *cls, struct MHD_Connection *connection, const char *url,
                                          const char *method, const char *version, const char *upload_data,
                                          size_t *upload_data_size, void **req_cls);

/// A daemon on its own polling thread (epoll or poll, whichever the system
/// has), bound to `address` (IPv4 or IPv6), serving at most `connections`
/// clients at once; an idle client is dropped after `idle_seconds`.
static inline struct MHD_Daemon *dl_mhd_start(const struct sockaddr *address, int ipv6, unsigned connections,
                                              unsigned idle_seconds, dl_mhd_handler handler, void *cls) {
    // ITC: a stop wakes the polling thread at once, whatever its clients do.
    unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC;
    // 2: `::`, every address of both families (IPv4 clients as mapped addresses).
    if (ipv6 == 2) flags |= MHD_USE_DUAL_STACK;
    else if (ipv6) flags |= MHD_USE_IPv6;
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, cls,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_CONNECTION_LIMIT, connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle_seconds,
                            MHD_OPTION_END);
}

/// The port the daemon listens on (the one the kernel chose for port 0); 0 when unknown.
static inline uint16_t dl_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// A response that owns a copy of `size` bytes of `data`.
static inline struct MHD_Response *dl_mhd_response_copy(const void *data, size_t size) {
    return MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_MUST_COPY);
}

/// A request header's value (NULL when absent).
static inline const char *dl_mhd_header(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}
/// A cookie's value (NULL when absent).
static inline const char *dl_mhd_cookie(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_COOKIE_KIND, name);
}
/// An argument of the URL's query, decoded (NULL when absent).
static inline const char *dl_mhd_query(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, name);
}

static inline enum MHD_Result dl_mhd_yes(void) { return MHD_YES; }
static inline enum MHD_Result dl_mhd_no(void) { return MHD_NO; }
#endif
