// The sandbox half of dl_lua.h (included from it, after the control block, hook and handler):
// per-script environments, the wrapped base and coroutine functions, and library opening.
#ifndef DL_LUA_SANDBOX_H
#define DL_LUA_SANDBOX_H
#include "dl_lua_match.h"
#include "dl_lua_bounds.h"

/* ---- Environments and the sandbox ---- */
/* Frozen tables: a script reads `dl` through an empty proxy whose metatable's __index is a
 * copy of the real table (nested tables frozen the same way). Writes raise (__newindex),
 * `setmetatable` meets __metatable, the sandbox's `rawset` refuses a table whose metatable is
 * marked __dlfrozen, and `pairs` iterates the copy through a C function that never hands the
 * copy itself to the script. So functions added to `dl` later are covered without a list. */
static inline int dl_frozen_newindex(lua_State *L) {
    return luaL_error(L, "dl is read-only (a script cannot change it; keep your own values in locals)");
}

static inline int dl_frozen_next(lua_State *L) {
    lua_settop(L, 2);
    if (!lua_getmetatable(L, 1)) return 0;
    lua_pushliteral(L, "__index");
    if (lua_rawget(L, -2) != LUA_TTABLE) return 0;
    lua_pushvalue(L, 2);
    return lua_next(L, -2) ? 2 : 0;
}

static inline int dl_frozen_pairs(lua_State *L) {
    lua_pushcfunction(L, dl_frozen_next);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

/* Whether the value at idx is a frozen proxy. */
static inline int dl_is_frozen(lua_State *L, int idx) {
    if (!lua_getmetatable(L, idx)) return 0;
    lua_pushliteral(L, "__dlfrozen");
    int frozen = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return frozen;
}

/* Pushes the frozen proxy of the table at idx; memo (an absolute index) maps tables already
 * frozen to their proxies, so cycles and shared subtables stay one proxy. */
static inline void dl_push_frozen(lua_State *L, int idx, int memo, int depth) {
    idx = lua_absindex(L, idx);
    lua_pushvalue(L, idx);
    if (lua_rawget(L, memo) == LUA_TTABLE) return;
    lua_pop(L, 1);
    luaL_checkstack(L, 8, "freezing dl");
    lua_createtable(L, 0, 0);           /* the proxy */
    lua_createtable(L, 0, 6);           /* its metatable */
    lua_createtable(L, 0, 16);          /* the copy it reads from */
    lua_pushvalue(L, idx);
    lua_pushvalue(L, -4);
    lua_rawset(L, memo);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -1) == LUA_TTABLE && depth < 16) {
            dl_push_frozen(L, -1, memo, depth + 1);
            lua_replace(L, -2);
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
    }
    /* A name the copy does not have reads through the table's own __index function (the
     * prelude's: an unknown name is an error naming the nearest real one). */
    if (lua_getmetatable(L, idx)) {
        if (lua_getfield(L, -1, "__index") == LUA_TFUNCTION) {
            lua_createtable(L, 0, 1);
            lua_insert(L, -2);
            lua_setfield(L, -2, "__index");
            lua_setmetatable(L, -3);
            lua_pop(L, 1);
        } else {
            lua_pop(L, 2);
        }
    }
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, dl_frozen_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, dl_frozen_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "__dlfrozen");
    lua_setmetatable(L, -2);
}

/* Pushes a fresh environment, a world of the script's own: every shared global copied in
 * (functions as they are, each table as a shallow copy of its own, so `string.upper = f` or
 * `table.insert = f` changes that script's copy only), `dl` frozen, `_G` the environment itself.
 * Nothing falls through to the shared globals, which only dlpipe's prelude sees; names that
 * start with "__" are internal and left out. */
static inline void dl_push_new_env(lua_State *L) {
    luaL_checkstack(L, 8, "new environment");
    lua_createtable(L, 0, 64);
    int env = lua_gettop(L);
    lua_createtable(L, 0, 4);           /* memo for dl_push_frozen */
    int memo = env + 1;
    lua_pushglobaltable(L);
    int globals = env + 2;
    lua_pushnil(L);
    while (lua_next(L, globals)) {
        size_t len = 0;
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &len) : NULL;
        if (k == NULL || (len >= 2 && k[0] == '_' && k[1] == '_') || strcmp(k, "_G") == 0) {
            lua_pop(L, 1);
            continue;
        }
        if (lua_type(L, -1) == LUA_TTABLE) {
            if (strcmp(k, "dl") == 0) {
                dl_push_frozen(L, -1, memo, 0);
            } else {
                lua_createtable(L, 0, 32);
                lua_pushnil(L);
                while (lua_next(L, -3)) {
                    lua_pushvalue(L, -2);
                    lua_insert(L, -2);
                    lua_rawset(L, -4);
                }
            }
            lua_replace(L, -2);
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, env);
    }
    lua_pop(L, 2);
    lua_pushvalue(L, -1);
    lua_setfield(L, -2, "_G");
}

/* Gives the function on top of the stack (a freshly loaded chunk) a new environment. */
static inline void dl_set_new_env(lua_State *L) {
    dl_push_new_env(L);
    if (lua_setupvalue(L, -2, 1) == NULL) lua_pop(L, 1);
}

/* Pushes the _ENV of the function calling the running C function, or a fresh environment. */
static inline void dl_push_caller_env(lua_State *L) {
    lua_Debug ar;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "f", &ar)) {
        for (int i = 1;; i++) {
            const char *name = lua_getupvalue(L, -1, i);
            if (name == NULL) break;
            if (strcmp(name, "_ENV") == 0 && lua_type(L, -1) == LUA_TTABLE) {
                lua_remove(L, -2);
                return;
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    dl_push_new_env(L);
}

/* Sandboxed `load`: mode forced to "t" (binary chunks can break the VM), and without an
 * explicit env the chunk gets the caller's environment. Upvalue 1: the original load. */
static inline int dl_sandbox_load(lua_State *L) {
    if (dl_bound_load_source(L)) return 2; /* too long: fail and a message, as load does */
    int env_given = lua_gettop(L) >= 4;
    lua_settop(L, 4);
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    if (!env_given) {
        dl_push_caller_env(L);
        lua_replace(L, 4);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 4, LUA_MULTRET);
    return lua_gettop(L);
}

/* Sandboxed `setmetatable`: the standard one, but refusing __gc. Finalizers run with hooks
 * off, so a finalizer could loop forever past the time budget. */
static inline int dl_sandbox_setmetatable(lua_State *L) {
    int t = lua_type(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    if (t == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL) return luaL_error(L, "__gc metamethods are not allowed in the sandbox");
        lua_pop(L, 1);
    }
    if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
        return luaL_error(L, "cannot change a protected metatable");
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

/* Sandboxed `rawset` (upvalue 1: the original): refuses frozen tables (`dl`). */
static inline int dl_sandbox_rawset(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    if (dl_is_frozen(L, 1)) return luaL_error(L, "dl is read-only (rawset cannot change it either)");
    lua_settop(L, 3);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 3, 1);
    return 1;
}

/* Errors raised by the hook are raised with hooks off (Lua clears allowhook while a hook runs):
 * a message handler they reach runs hookless, and so do __close methods of a coroutine they
 * kill, once the coroutine is closed. The next three wrappers keep script code out of both. */

/* The handler given to xpcall: after a timeout it returns the error untouched instead of
 * running the script's handler. Upvalue 1: the script's handler. */
static inline int dl_xpcall_handler(lua_State *L) {
    if (dl_ctl(L)->timed_out) return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static inline int dl_finish_pcall(lua_State *L, int status, lua_KContext extra) {
    if (status != LUA_OK && status != LUA_YIELD) {
        lua_pushboolean(L, 0);
        lua_pushvalue(L, -2);
        return 2;
    }
    return lua_gettop(L) - (int)extra;
}

/* Sandboxed `xpcall`: the standard one (lbaselib.c), with the handler wrapped. */
static inline int dl_sandbox_xpcall(lua_State *L) {
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, dl_xpcall_handler, 1);
    lua_replace(L, 2);
    lua_pushboolean(L, 1);
    lua_pushvalue(L, 1);
    lua_rotate(L, 3, 2);
    return dl_finish_pcall(L, lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, dl_finish_pcall), 2);
}

static inline int dl_cobody_k(lua_State *L, int status, lua_KContext extra) {
    if (status != LUA_OK && status != LUA_YIELD) return lua_error(L);
    return lua_gettop(L) - (int)extra;
}

/* Body of every sandbox coroutine: runs the script's function (upvalue 1) under a yieldable
 * pcall, so an error from the hook is caught inside the coroutine (which turns hooks back on
 * and runs its __close methods under the budget), then raises it again from here. */
static inline int dl_cobody(lua_State *L) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    return dl_cobody_k(L, lua_pcallk(L, lua_gettop(L) - 1, LUA_MULTRET, 0, 0, dl_cobody_k), 0);
}

/* Sandboxed coroutine.create / coroutine.wrap (upvalue 1: the original): wraps the body. */
static inline int dl_sandbox_cocreate(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_pushcclosure(L, dl_cobody, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

/* Sandboxed coroutine.wrap (upvalue 1: the original): wraps the body as coroutine.create
 * does, and the function it returns in dl_sandbox_wrapcall (which knows its coroutine from
 * the original function's upvalue), so that resuming through it is tracked and bounded too. */
static inline int dl_sandbox_cowrap(lua_State *L) {
    dl_sandbox_cocreate(L);
    if (lua_getupvalue(L, -1, 1) == NULL || lua_type(L, -1) != LUA_TTHREAD)
        return luaL_error(L, "coroutine.wrap: unexpected function"); /* not Lua 5.4's auxwrap */
    lua_pushcclosure(L, dl_sandbox_wrapcall, 2);
    return 1;
}

/* Sandboxed string.rep. Lua's own copies the piece n times in C, where the hook never runs:
 * string.rep("", 2^60) would spin forever and string.rep("x", 1e8) takes most of a second.
 * This one fills the buffer by doubling (a few memcpy calls), and a result larger than the
 * whole memory cap is a memory error at the caller's line, without trying. */
static inline int dl_sandbox_rep(lua_State *L) {
    size_t l, lsep;
    const char *s = luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    const char *sep = luaL_optlstring(L, 3, "", &lsep);
    if (n <= 0 || (l == 0 && (lsep == 0 || n == 1))) {
        lua_pushliteral(L, "");
        return 1;
    }
    dl_lua_ctl *c = dl_ctl(L);
    double want = (double)l * (double)n + (double)lsep * (double)(n - 1);
    lua_Debug ar;
    if (want > 65536.0 && lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
        dl_copy_position(c->last_src, &c->last_line, &ar); /* where a refused allocation below happened */
    if (c->enforce && want > (double)c->limit) {
        c->refusals++;
        lua_pushliteral(L, "not enough memory"); /* lua_error makes this exact text a LUA_ERRMEM */
        return lua_error(L);
    }
    if (want > (double)((size_t)1 << 46)) return luaL_error(L, "resulting string too large");
    size_t total = (size_t)want, unit = l + lsep;
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, total);
    memcpy(p, s, l);
    size_t done = l;
    if (n > 1) {
        memcpy(p + l, sep, lsep);
        done = unit; /* the content has period `unit`: copying a multiple of it keeps it */
    }
    while (done < total) {
        size_t k = done <= total - done ? done : total - done;
        memcpy(p + done, p, k);
        done += k;
    }
    luaL_pushresultsize(&b, total);
    return 1;
}

/* Replaces table[name] (table on top) with a closure of `f` over the old value. */
static inline void dl_wrap_field(lua_State *L, const char *name, lua_CFunction f) {
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, -2, name);
}

/* Opens the sandbox libraries into the globals (run under pcall: it allocates). */
static inline int dl_open_sandbox(lua_State *L) {
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base}, {LUA_STRLIBNAME, luaopen_string}, {LUA_TABLIBNAME, luaopen_table},
        {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_COLIBNAME, luaopen_coroutine},
        {NULL, NULL}};
    for (const luaL_Reg *lib = libs; lib->func; lib++) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    /* os: only the clock, the date and the environment */
    luaL_requiref(L, LUA_OSLIBNAME, luaopen_os, 0);
    lua_createtable(L, 0, 4);
    static const char *const os_keep[] = {"time", "clock", "date", "getenv", NULL};
    for (const char *const *k = os_keep; *k; k++) {
        lua_getfield(L, -2, *k);
        lua_setfield(L, -2, *k);
    }
    lua_setglobal(L, "os");
    lua_pop(L, 1);
    lua_pushnil(L);
    lua_setglobal(L, "dofile");
    lua_pushnil(L);
    lua_setglobal(L, "loadfile");
    lua_getglobal(L, "string"); /* string.dump is useless when binary chunks are refused */
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pushcfunction(L, dl_sandbox_rep);
    lua_setfield(L, -2, "rep");
    static const luaL_Reg matchers[] = {{"find", dl_pm_find}, {"match", dl_pm_match},
        {"gmatch", dl_pm_gmatch}, {"gsub", dl_pm_gsub}, {NULL, NULL}};
    luaL_setfuncs(L, matchers, 0); /* with deadline checks (dl_lua_match.h) */
    static const luaL_Reg long_calls[] = {{"upper", dl_sandbox_upper}, {"lower", dl_sandbox_lower},
        {"reverse", dl_sandbox_reverse}, {NULL, NULL}};
    luaL_setfuncs(L, long_calls, 0); /* with deadline checks (dl_lua_bounds.h) */
    dl_wrap_field(L, "format", dl_sandbox_format);
    lua_pop(L, 1);
    lua_getglobal(L, "table");
    dl_wrap_field(L, "move", dl_sandbox_move);
    dl_wrap_field(L, "sort", dl_sandbox_sort);
    lua_pop(L, 1);
    dl_pushglobaltable(L);
    dl_wrap_field(L, "load", dl_sandbox_load);
    lua_pushcfunction(L, dl_sandbox_xpcall);
    lua_setfield(L, -2, "xpcall");
    lua_pushcfunction(L, dl_sandbox_setmetatable);
    lua_setfield(L, -2, "setmetatable");
    dl_wrap_field(L, "rawset", dl_sandbox_rawset);
    lua_getfield(L, -1, "coroutine");
    dl_wrap_field(L, "create", dl_sandbox_cocreate);
    dl_wrap_field(L, "wrap", dl_sandbox_cowrap);
    dl_wrap_field(L, "resume", dl_sandbox_coresume);
    dl_wrap_field(L, "close", dl_sandbox_coclose);
    lua_pop(L, 2);
    /* The string metatable is one per state: `getmetatable("").__index.upper = f` would change
     * s:upper() for every script. getmetatable("") now answers false, and the table behind
     * method calls is the original string library, which no script environment holds. */
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 2);
    return 0;
}

static inline int dl_open_all(lua_State *L) {
    luaL_openlibs(L);
    return 0;
}

/* Opens the libraries in protected mode; returns a Lua status. */
static inline int dl_open_libs(lua_State *L, int unsafe) {
    lua_pushcfunction(L, unsafe ? dl_open_all : dl_open_sandbox);
    return dl_pcall(L, 0, 0, 0);
}

#endif
