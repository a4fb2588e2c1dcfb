// SQLite for the state store. SQLITE_TRANSIENT is a cast macro Swift cannot import.
#ifndef DL_SQLITE_H
#define DL_SQLITE_H
#include <sqlite3.h>

/// Binds text that SQLite copies at once (so Swift's buffer may go away).
static inline int dl_sqlite_bind_text(sqlite3_stmt *s, int i, const char *text, int bytes) {
    return sqlite3_bind_text(s, i, text, bytes, SQLITE_TRANSIENT);
}
#endif
