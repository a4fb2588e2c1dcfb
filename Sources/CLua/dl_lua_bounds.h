// Bounds on the sandbox's long C calls (included from dl_lua_sandbox.h). The count hook only
// runs between Lua instructions; these library functions can run for a long time inside one
// call, so each checks the deadline itself, or is capped. Also the mitigation of Lua 5.4.4's
// crash with nested coroutine.close (docs/reliability.md lists every 5.4.4 bug).
#ifndef DL_LUA_BOUNDS_H
#define DL_LUA_BOUNDS_H
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

#endif
