// libidn2 for internationalised host names: the UTF-8 entry point, which
// does not depend on the process's locale (cron's is often C).
#ifndef DL_IDN_H
#define DL_IDN_H
#include <idn2.h>

/// The ASCII (punycode) form of a UTF-8 host name into *out (free it with
/// dl_idn_free). UTS 46 non-transitional first, as browsers and curl do; a
/// name that only the transitional rules accept (a few old spellings) gets
/// those. Returns IDN2_OK or libidn2's error code.
static inline int dl_idn_to_ascii(const char *utf8, char **out) {
    int rc = idn2_to_ascii_8z(utf8, out, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
    if (rc == IDN2_DISALLOWED) {
        rc = idn2_to_ascii_8z(utf8, out, IDN2_NFC_INPUT | IDN2_TRANSITIONAL);
    }
    return rc;
}

/// Frees what dl_idn_to_ascii gave.
static inline void dl_idn_free(char *text) { idn2_free(text); }

/// libidn2's message for an error code (static text).
static inline const char *dl_idn_error(int rc) { return idn2_strerror(rc); }
#endif
