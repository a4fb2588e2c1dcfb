// Bounds on the sandbox's long C calls (included from dl_lua_sandbox.h). The count hook only
// runs between Lua instructions; these library functions can run for a long time inside one
// call, so each checks the deadline itself, or is capped. Also the mitigation of Lua 5.4.4's
// crash with nested coroutine.close (docs/reliability.md lists every 5.4.4 bug).
#ifndef DL_LUA_BOUNDS_H
#define DL_LUA_BOUNDS_H
#include <ctype.h>
#include <stddef.h>

/* ---- The deadline, which the watchdog thread reads ---- */
/* The watchdog (dl_watchdog_poke, on its own thread) loads deadline_ns atomically while the Lua
 * thread runs: every store to it is atomic too, or the two race (ThreadSanitizer, scripts/tsan). */
static inline void dl_ctl_set_deadline(dl_lua_ctl *c, int64_t deadline_ns) {
    __atomic_store_n(&c->deadline_ns, deadline_ns, __ATOMIC_RELAXED);
}

/* Puts a saved control block back (the runtime does after each call): the deadline with an atomic
 * store, and `watch`, which never changes, not written at all (the watchdog reads it). */
static inline void dl_ctl_restore(dl_lua_ctl *c, const dl_lua_ctl *saved) {
    size_t deadline = offsetof(dl_lua_ctl, deadline_ns), after = deadline + sizeof c->deadline_ns;
    memcpy(c, saved, deadline);
    memcpy((char *)c + after, (const char *)saved + after, offsetof(dl_lua_ctl, watch) - after);
    dl_ctl_set_deadline(c, saved->deadline_ns);
}

/* ---- The C stack ---- */
/* How much C stack the coroutine functions may find in use below the outermost call into Lua.
 * Lua 5.4.4 counts C calls per thread and forgets the count of the thread that closes a
 * coroutine: 30,000 coroutines each closing the previous one from a <close> variable ran
 * off the C stack (SIGSEGV; fixed in 5.4.5). Measuring the real stack catches that chain and
 * any other nesting of resumes and closes; 1 MiB is several times what Lua's own limit of 200
 * nested C calls needs, and far below the 8 MiB (16 MiB on dlpipe's Lua thread) of a thread. */
#define DL_C_STACK_MAX ((uintptr_t)1 << 20)

/* lua_pcallk that records where the C stack stood when the outermost call entered Lua. */
static inline int dl_pcall_script(lua_State *L, int nargs, int nresults, int msgh) {
    dl_lua_ctl *c = dl_ctl(L);
    volatile char probe = 0;
    uintptr_t saved = c->stack_base;
    if (saved == 0) c->stack_base = (uintptr_t)&probe;
    int status = lua_pcallk(L, nargs, nresults, msgh, 0, NULL);
    c->stack_base = saved;
    return status;
}

/* Raises "C stack overflow" when the C stack in use exceeds DL_C_STACK_MAX. */
static inline void dl_check_c_stack(lua_State *L, const char *what) {
    dl_lua_ctl *c = dl_ctl(L);
    volatile char probe = 0;
    uintptr_t here = (uintptr_t)&probe;
    if (c->stack_base == 0) return;
    uintptr_t used = c->stack_base > here ? c->stack_base - here : here - c->stack_base;
    if (used > DL_C_STACK_MAX) luaL_error(L, "%s: C stack overflow (coroutines nested too deeply)", what);
}

/* ---- Coroutines: the running thread and the stack ---- */
/* Calls upvalue 1 (coroutine.resume, coroutine.close or a coroutine.wrap function) with the
 * arguments after checking the C stack, telling the watchdog that `co` runs meanwhile (it
 * pokes the running thread). Not protected (a protected call would spend one more of Lua's
 * 200 C levels per coroutine): when the call raises, the watchdog keeps naming `co` until the
 * hook or the next resume names another thread, and dl_name_running keeps `co` from being
 * collected meanwhile. */
static inline int dl_co_call(lua_State *L, int co_index, const char *what) {
    dl_check_c_stack(L, what);
    int n = lua_gettop(L);
    lua_State *co = lua_tothread(L, co_index);
    if (co != NULL) {
        lua_pushvalue(L, co_index);
        dl_name_running(L, co);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    if (co != NULL) {
        lua_pushthread(L);
        dl_name_running(L, L);
    }
    return lua_gettop(L);
}

static inline int dl_sandbox_coresume(lua_State *L) { return dl_co_call(L, 1, "coroutine.resume"); }
static inline int dl_sandbox_coclose(lua_State *L) { return dl_co_call(L, 1, "coroutine.close"); }
/* Upvalue 1: the function coroutine.wrap made; upvalue 2: its coroutine. */
static inline int dl_sandbox_wrapcall(lua_State *L) {
    return dl_co_call(L, lua_upvalueindex(2), "coroutine.wrap");
}

/* ---- table.move ---- */
/* Elements moved between two deadline checks. */
#define DL_MOVE_CHUNK 4096

/* Sandboxed table.move (upvalue 1: the original): the same checks and the same order, done in
 * chunks of DL_MOVE_CHUNK elements with a deadline check between them. Moving nils costs no
 * memory, so table.move({}, 1, 2^62, 2) ran forever inside one call. */
static inline int dl_sandbox_move(lua_State *L) {
    lua_Integer f = luaL_checkinteger(L, 2);
    lua_Integer e = luaL_checkinteger(L, 3);
    lua_Integer t = luaL_checkinteger(L, 4);
    int has_dest = !lua_isnoneornil(L, 5);
    int tt = has_dest ? 5 : 1;
    if (e < f || e - f < DL_MOVE_CHUNK) { /* small: the original does it all (and its checks) */
        int n = lua_gettop(L);
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_insert(L, 1);
        lua_call(L, n, 1);
        return 1;
    }
    luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
    lua_Integer n = e - f + 1;
    luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4, "destination wrap around");
    /* Overlapping ranges of one table go backwards, as in ltablib.c; the original picks the
     * right direction within each chunk itself. */
    int backward = !(t > e || t <= f || (tt != 1 && !lua_rawequal(L, 1, tt)));
    for (lua_Integer done = 0; done < n; done += DL_MOVE_CHUNK) {
        lua_Integer count = n - done < DL_MOVE_CHUNK ? n - done : DL_MOVE_CHUNK;
        lua_Integer offset = backward ? n - done - count : done;
        dl_check_deadline(L, "table.move");
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_pushvalue(L, 1);
        lua_pushinteger(L, f + offset);
        lua_pushinteger(L, f + offset + count - 1);
        lua_pushinteger(L, t + offset);
        lua_pushvalue(L, tt);
        lua_call(L, 5, 0);
    }
    lua_pushvalue(L, tt);
    return 1;
}

/* ---- table.sort ---- */
/* The comparison table.sort uses when the script gives none, or a C function (upvalue 1, or
 * none): checks the deadline every 1024 comparisons. Without it, sorting a large array, or
 * strings full of NUL bytes (Lua compares them with one strcoll per NUL), ran in C to the end. */
static inline int dl_sort_compare(lua_State *L) {
    dl_lua_ctl *c = dl_ctl(L);
    /* two strings can take a second to compare (one strcoll per NUL byte): check every time */
    if ((++c->c_steps & 1023) == 0 || (lua_type(L, 1) == LUA_TSTRING && lua_type(L, 2) == LUA_TSTRING))
        dl_check_deadline(L, "table.sort");
    if (lua_isnone(L, lua_upvalueindex(1))) {
        lua_pushboolean(L, lua_compare(L, 1, 2, LUA_OPLT));
        return 1;
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* Sandboxed table.sort (upvalue 1: the original): a Lua comparator runs under the count hook
 * already; no comparator, or a C one, goes through dl_sort_compare. */
static inline int dl_sandbox_sort(lua_State *L) {
    lua_settop(L, 2);
    if (lua_isnil(L, 2)) {
        lua_pushcfunction(L, dl_sort_compare);
        lua_replace(L, 2);
    } else if (lua_iscfunction(L, 2)) {
        lua_pushvalue(L, 2);
        lua_pushcclosure(L, dl_sort_compare, 1);
        lua_replace(L, 2);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 2, 0);
    return 0;
}

/* ---- load ---- */
/* The most source text `load` compiles in the sandbox. Compiling runs in C with no hook, and
 * some chunks take time that grows with the square of their length (a goto per label: 0.4 s
 * for 440 KB); a job file itself is not bound by this. */
#define DL_LOAD_MAX ((size_t)1 << 20)

/* A reader function given to `load`, counting what it returns (upvalue 1: the script's
 * reader, 2: bytes so far). Past DL_LOAD_MAX it raises, and load returns fail and the message. */
static inline int dl_load_reader(lua_State *L) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_call(L, 0, 1);
    size_t len = 0;
    if (lua_type(L, -1) == LUA_TSTRING) lua_tolstring(L, -1, &len);
    lua_Integer total = lua_tointeger(L, lua_upvalueindex(2)) + (lua_Integer)len;
    if ((size_t)total > DL_LOAD_MAX)
        return luaL_error(L, "load: the chunk is larger than %d KiB, the sandbox's limit", (int)(DL_LOAD_MAX >> 10));
    lua_pushinteger(L, total);
    lua_replace(L, lua_upvalueindex(2));
    return 1;
}

/* Applies DL_LOAD_MAX to load's first argument: a longer string makes load return fail and a
 * message (returns 2 after pushing them), a reader function is wrapped (returns 0). */
static inline int dl_bound_load_source(lua_State *L) {
    size_t len = 0;
    if (lua_type(L, 1) == LUA_TSTRING && (lua_tolstring(L, 1, &len), len > DL_LOAD_MAX)) {
        luaL_pushfail(L);
        lua_pushfstring(L, "load: the chunk has %I bytes, more than %d KiB, the sandbox's limit",
                        (lua_Integer)len, (int)(DL_LOAD_MAX >> 10));
        return 2;
    }
    if (lua_type(L, 1) == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        lua_pushinteger(L, 0);
        lua_pushcclosure(L, dl_load_reader, 2);
        lua_replace(L, 1);
    }
    return 0;
}

/* ---- Arguments of calls into Swift ---- */
/* Counts the table entries in the value at idx, nested tables included (a table met twice is
 * counted twice), and stops past `limit`: bounded work that never raises. Swift converts every
 * entry of an argument into its own values, about 90 times the Lua heap's size and seconds
 * for a few hundred thousand entries, where neither the budget nor the cap can stop it. */
static inline long dl_count_entries(lua_State *L, int idx, long limit, int depth) {
    if (lua_type(L, idx) != LUA_TTABLE) return 0;
    if (depth > 64 || !lua_checkstack(L, 3)) return limit + 1;
    idx = lua_absindex(L, idx);
    long count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        count += 1 + dl_count_entries(L, -2, limit - count, depth + 1) + dl_count_entries(L, -1, limit - count, depth + 1);
        lua_pop(L, 1);
        if (count > limit) {
            lua_pop(L, 1);
            return count;
        }
    }
    return count;
}

/* The bytes Swift's copy of the value at idx holds: its strings' lengths, table keys and
 * values included, and 64 for each table entry (a Swift dictionary slot and its values).
 * Called after dl_count_entries bounded the walk. */
static inline size_t dl_count_bytes(lua_State *L, int idx, int depth) {
    int type = lua_type(L, idx);
    if (type == LUA_TSTRING) { size_t length; lua_tolstring(L, idx, &length); return length; }
    if (type != LUA_TTABLE || depth > 64 || !lua_checkstack(L, 3)) return 0;
    idx = lua_absindex(L, idx);
    size_t bytes = 0;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        /* lua_tolstring would turn a number key into a string and break lua_next: only
         * strings are measured, by type, above. */
        bytes += 64 + dl_count_bytes(L, -2, depth + 1) + dl_count_bytes(L, -1, depth + 1);
        lua_pop(L, 1);
    }
    return bytes;
}

/* ---- Long string calls: format's %q, upper, lower, reverse ---- */
/* Bytes these functions handle between two deadline checks (about a millisecond). */
#define DL_SCAN_CHUNK ((size_t)1 << 20)
/* A string argument of %q at least this long is quoted by dl_sandbox_format itself, with
 * deadline checks; Lua's own %q took 2.5 s over 30 MB inside one call. */
#define DL_QUOTE_MIN ((size_t)1 << 18)

/* Adds s (len bytes) to b as %q writes a string: between double quotes; `"`, `\` and newline
 * after a backslash; any other control byte as \ddd (three digits when a digit follows, else
 * as few as needed); every other byte as it is. Checks the deadline every DL_SCAN_CHUNK bytes. */
static inline void dl_add_quoted(lua_State *L, luaL_Buffer *b, const char *s, size_t len) {
    luaL_addchar(b, '"');
    for (size_t done = 0; done < len;) {
        size_t stop = len - done < DL_SCAN_CHUNK ? len : done + DL_SCAN_CHUNK;
        char *out = luaL_prepbuffsize(b, 4 * (stop - done) + 1); /* 4 bytes at most per byte, and snprintf's NUL */
        char *o = out;
        for (; done < stop; done++) {
            unsigned char c = (unsigned char)s[done];
            if (c == '"' || c == '\\' || c == '\n') {
                *o++ = '\\';
                *o++ = (char)c;
            } else if (iscntrl(c)) {
                int digit_next = done + 1 < len && isdigit((unsigned char)s[done + 1]);
                o += snprintf(o, 5, digit_next ? "\\%03d" : "\\%d", c);
            } else {
                *o++ = (char)c;
            }
        }
        luaL_addsize(b, (size_t)(o - out));
        dl_check_deadline(L, "string.format");
    }
    luaL_addchar(b, '"');
}

/* Moves i past one conversion of a format (at its letter: flags, width, precision skipped). */
static inline size_t dl_format_spec_end(const char *f, size_t n, size_t i) {
    while (i < n && strchr("-+ #0", f[i]) != NULL && f[i] != 0) i++;
    while (i < n && isdigit((unsigned char)f[i])) i++;
    if (i < n && f[i] == '.') {
        i++;
        while (i < n && isdigit((unsigned char)f[i])) i++;
    }
    return i;
}

/* Whether argument `arg` is a string that %q should quote here (long enough). */
static inline int dl_format_quotes_here(lua_State *L, const char *f, size_t spec_end, int arg) {
    return f[spec_end] == 'q' && lua_type(L, arg) == LUA_TSTRING && lua_rawlen(L, arg) >= DL_QUOTE_MIN;
}

/* Raises the error (on top) of the original string.format called from dl_sandbox_format. Lua
 * names a function in "bad argument" messages by where the library tables hold it, and they
 * hold the wrapper: the original's '?' becomes 'string.format' again. */
static inline int dl_format_error(lua_State *L) {
    const char *message = lua_tostring(L, -1);
    if (message != NULL && strncmp(message, "bad argument #", 14) == 0) {
        luaL_gsub(L, message, " to '?' (", " to 'string.format' (");
        lua_remove(L, -2);
    }
    return lua_error(L);
}

/* Sandboxed string.format (upvalue 1: the original). Without a long string for %q, the original
 * does all. With one, the original first formats the call with "" in place of each such string,
 * which raises every error the call would (so messages are Lua's own); then the result is built
 * piece by piece: text as it is, each long %q string quoted here, each other conversion by the
 * original (so a __tostring of a %s argument runs twice on this path). */
static inline int dl_sandbox_format(lua_State *L) {
    size_t n;
    const char *f = luaL_checklstring(L, 1, &n);
    int top = lua_gettop(L), arg = 1, slow = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i] != '%') continue;
        if (++i < n && f[i] == '%') continue;
        i = dl_format_spec_end(f, n, i);
        if (i < n && ++arg <= top && dl_format_quotes_here(L, f, i, arg)) slow = 1;
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    for (int k = 1; k <= top; k++) {
        if (slow && k > 1 && lua_type(L, k) == LUA_TSTRING && lua_rawlen(L, k) >= DL_QUOTE_MIN)
            lua_pushliteral(L, "");
        else
            lua_pushvalue(L, k);
    }
    if (lua_pcall(L, top, 1, 0) != LUA_OK) dl_format_error(L);
    if (!slow) return 1;
    lua_pop(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    arg = 1;
    for (size_t i = 0; i < n; i++) {
        if (f[i] != '%') {
            luaL_addchar(&b, f[i]);
            continue;
        }
        if (f[i + 1] == '%') {
            luaL_addchar(&b, '%');
            i++;
            continue;
        }
        size_t end = dl_format_spec_end(f, n, i + 1);
        arg++;
        if (dl_format_quotes_here(L, f, end, arg)) {
            size_t len;
            const char *s = lua_tolstring(L, arg, &len);
            dl_add_quoted(L, &b, s, len);
        } else {
            lua_pushvalue(L, lua_upvalueindex(1));
            lua_pushlstring(L, f + i, end - i + 1);
            lua_pushvalue(L, arg);
            lua_call(L, 2, 1);
            luaL_addvalue(&b);
        }
        i = end;
    }
    luaL_pushresult(&b);
    return 1;
}

/* Sandboxed string.upper (up = 1) and string.lower (0): the C library's toupper / tolower of
 * each byte, as Lua's, with a deadline check every DL_SCAN_CHUNK bytes. */
static inline int dl_sandbox_case(lua_State *L, int up, const char *what) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, len);
    for (size_t i = 0; i < len; i++) {
        if ((i & (DL_SCAN_CHUNK - 1)) == 0 && i > 0) dl_check_deadline(L, what);
        out[i] = (char)(up ? toupper((unsigned char)s[i]) : tolower((unsigned char)s[i]));
    }
    luaL_pushresultsize(&b, len);
    return 1;
}
static inline int dl_sandbox_upper(lua_State *L) { return dl_sandbox_case(L, 1, "string.upper"); }
static inline int dl_sandbox_lower(lua_State *L) { return dl_sandbox_case(L, 0, "string.lower"); }

/* Sandboxed string.reverse, with a deadline check every DL_SCAN_CHUNK bytes. */
static inline int dl_sandbox_reverse(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, len);
    for (size_t i = 0; i < len; i++) {
        if ((i & (DL_SCAN_CHUNK - 1)) == 0 && i > 0) dl_check_deadline(L, "string.reverse");
        out[i] = s[len - 1 - i];
    }
    luaL_pushresultsize(&b, len);
    return 1;
}

#endif
