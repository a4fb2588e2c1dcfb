// Typed stand-ins for libcurl's variadic calls, which Swift cannot call directly.
// Each wrapper fixes the argument type that the option expects.
#ifndef DL_CURL_H
#define DL_CURL_H
#include <curl/curl.h>

typedef size_t (*dl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
typedef int (*dl_xferinfo_callback)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                    curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode dl_easy_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode dl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode dl_easy_setopt_string(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode dl_easy_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode dl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode dl_easy_setopt_data_callback(CURL *h, CURLoption o, dl_data_callback f) {
    return curl_easy_setopt(h, o, f);
}
static inline CURLcode dl_easy_setopt_xferinfo(CURL *h, dl_xferinfo_callback f) {
    return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f);
}
static inline CURLcode dl_easy_getinfo_long(CURL *h, CURLINFO i, long *out) {
    return curl_easy_getinfo(h, i, out);
}
static inline CURLcode dl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *out) {
    return curl_easy_getinfo(h, i, out);
}
static inline CURLcode dl_easy_getinfo_string(CURL *h, CURLINFO i, char **out) {
    return curl_easy_getinfo(h, i, out);
}
static inline CURLcode dl_easy_getinfo_pointer(CURL *h, CURLINFO i, void **out) {
    return curl_easy_getinfo(h, i, out);
}
static inline CURLMcode dl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}
/// Authentication masks as plain values: the macros are casts and shifts Swift does not import.
static inline long dl_curlauth_digest(void) { return (long)CURLAUTH_DIGEST; }
static inline long dl_curlauth_any(void) { return (long)CURLAUTH_ANY; }
/// CURL_WRITEFUNC_PAUSE as a plain value: the macro is an expression Swift does not import.
static inline size_t dl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
/// Shares one kind of data (CURL_LOCK_DATA_COOKIE, ...) through a share handle.
static inline CURLSHcode dl_share_data(CURLSH *sh, long data) {
    return curl_share_setopt(sh, CURLSHOPT_SHARE, data);
}

#endif
