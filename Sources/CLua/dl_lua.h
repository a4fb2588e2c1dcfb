// Lua 5.4 for Swift: stand-ins for macros Swift cannot import, plus the C pieces that
// must raise Lua errors (a Lua error is a longjmp, and no longjmp may cross a Swift frame).
// Everything that can call lua_error lives here: the trampoline, the hook, the sandbox wrappers.
#ifndef DL_LUA_H
#define DL_LUA_H
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdio.h>
#include <locale.h>

/* ---- Macro stand-ins ---- */
static inline int dl_pcall(lua_State *L, int nargs, int nresults, int msgh) {
    return lua_pcallk(L, nargs, nresults, msgh, 0, NULL);
}
static inline void dl_pop(lua_State *L, int n) { lua_settop(L, -(n)-1); }
static inline void dl_newtable(lua_State *L) { lua_createtable(L, 0, 0); }
static inline const char *dl_tolstring(lua_State *L, int i, size_t *len) { return lua_tolstring(L, i, len); }
static inline lua_Integer dl_tointeger(lua_State *L, int i) { return lua_tointegerx(L, i, NULL); }
static inline lua_Number dl_tonumber(lua_State *L, int i) { return lua_tonumberx(L, i, NULL); }
static inline int dl_upvalueindex(int i) { return lua_upvalueindex(i); }
static inline int dl_registryindex(void) { return LUA_REGISTRYINDEX; }
static inline int dl_multret(void) { return LUA_MULTRET; }
static inline void dl_insert(lua_State *L, int i) { lua_insert(L, i); }
static inline void dl_remove(lua_State *L, int i) { lua_remove(L, i); }
static inline void dl_pushglobaltable(lua_State *L) { lua_pushglobaltable(L); }
/* lua_gc is variadic: these are the two uses the runtime needs. */
static inline void dl_gc_collect(lua_State *L) { lua_gc(L, LUA_GCCOLLECT); }
/* Restarts a collector that a script stopped. Only then: LUA_GCRESTART also zeroes the
 * GC debt, which makes the next allocation run a collection step, and a step per handler
 * call was most of a trivial handler's cost once the heap held a few thousand objects. */
static inline void dl_gc_restart(lua_State *L) {
    if (!lua_gc(L, LUA_GCISRUNNING)) lua_gc(L, LUA_GCRESTART);
}

/* strcoll in the C locale: a byte-wise compare (LuaRuntime sets it once per process). */
static inline void dl_use_byte_collation(void) { setlocale(LC_COLLATE, "C"); }

/* ---- Shared control block: memory cap, time budget, owner ----
 * One per lua_State. The allocator gets it as `ud`; Lua code reaches it through
 * lua_getextraspace, which lua_newthread copies into every coroutine, so one budget
 * is charged by all coroutines of the state. */
#define DL_HOOK_COUNT 1000

typedef struct dl_lua_ctl {
    size_t in_use;        /* bytes held by the state */
    size_t limit;         /* cap on in_use while enforce is on */
    int enforce;          /* 1 while Lua code runs; 0 while Swift runs, so its pushes never fail */
    unsigned refusals;    /* allocations refused (lets the runtime classify "not enough memory") */
    int64_t deadline_ns;  /* CLOCK_MONOTONIC deadline of the running call; 0 = none */
    int timed_out;        /* set once the hook saw the deadline pass; makes the stop sticky */
    int stop_line;        /* where the script was when the deadline passed */
    char stop_src[LUA_IDSIZE];
    int last_line;        /* where the hook last saw Lua code (position for memory errors) */
    char last_src[LUA_IDSIZE];
    int err_line;         /* first Lua frame of the last error that reached the runtime's handler */
    char err_src[LUA_IDSIZE];
    char stop_in[32];     /* the C function the deadline caught the script in ("" for Lua code) */
    void *owner;          /* the Swift LuaRuntime (unretained), for the dispatcher */
    uintptr_t stack_base; /* C stack address where the outermost call entered Lua */
    unsigned c_steps;     /* calls of the sandbox's sort comparator (a clock read every 1024) */
    struct dl_watch *watch; /* what the watchdog thread shares (outside the block: the runtime
                             * saves and restores the block around nested calls) */
    size_t blocks_made;   /* blocks the allocator made: what an event costs, counted (after
                           * `watch`, so the restore after a call leaves it running) */
} dl_lua_ctl;

/* Shared with the watchdog thread (LuaWatchdog.swift), which wakes a few times a second. */
typedef struct dl_watch {
    lua_State *running;   /* the thread running script code now (NULL: none) */
    int64_t poked_ns;     /* the deadline the watchdog last acted on */
    int poking;           /* 1 while the watchdog is inside lua_sethook on `running` */
} dl_watch;

/* Changes the running thread. Waits for a poke in progress, so that the watchdog never
 * touches a thread after the Lua thread stopped naming it (the thread could then be
 * collected): both sides use sequentially consistent atomics (a Dekker-style handshake). */
static inline void dl_set_running(dl_lua_ctl *c, lua_State *L) {
    dl_watch *w = c->watch;
    if (w == NULL) return;
    __atomic_store_n(&w->running, L, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&w->poking, __ATOMIC_SEQ_CST)) { /* a few nanoseconds */ }
}

static inline dl_lua_ctl *dl_ctl(lua_State *L) { return *(dl_lua_ctl **)lua_getextraspace(L); }
static inline const char *dl_ctl_stop_src(const dl_lua_ctl *c) { return c->stop_src; }
static inline const char *dl_ctl_last_src(const dl_lua_ctl *c) { return c->last_src; }
static inline const char *dl_ctl_err_src(const dl_lua_ctl *c) { return c->err_src; }
static inline const char *dl_ctl_stop_in(const dl_lua_ctl *c) { return c->stop_in; }

static inline int64_t dl_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Memory-capped allocator: refuses growth past the limit only while enforcing.
 * Shrinking and freeing always succeed, as Lua requires. */
static inline void *dl_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    dl_lua_ctl *c = (dl_lua_ctl *)ud;
    size_t old = ptr ? osize : 0; /* with ptr == NULL, osize is a type tag, not a size */
    if (nsize == 0) {
        free(ptr);
        c->in_use -= old;
        return NULL;
    }
    if (nsize > old && c->enforce && (nsize - old > c->limit || c->in_use + (nsize - old) > c->limit)) {
        c->refusals++;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p == NULL) {
        c->refusals++;
        return NULL;
    }
    if (ptr == NULL) c->blocks_made++;
    c->in_use = c->in_use - old + nsize;
    return p;
}

static inline void dl_copy_position(char *dst, int *line, const lua_Debug *ar) {
    memcpy(dst, ar->short_src, LUA_IDSIZE);
    dst[LUA_IDSIZE - 1] = 0;
    *line = ar->currentline;
}

static inline void dl_hook(lua_State *L, lua_Debug *ar);

/* Names `thread` (also on top of L's stack, which this pops) as the running one for the
 * watchdog, and keeps it in the registry so that it cannot be collected while named. The
 * registry slot exists from the start (dl_newstate), so the assignment never allocates. */
static inline void dl_name_running(lua_State *L, lua_State *thread) {
    lua_setfield(L, LUA_REGISTRYINDEX, "dl.running");
    dl_set_running(dl_ctl(L), thread);
}

/* Marks the call timed out (once: the first position and place stick), switches L's hook to
 * every instruction, and raises "time budget exceeded". `ar` is where the script was (NULL:
 * unknown), `what` the C function that caught it (NULL: Lua code). */
static inline int dl_raise_timeout(lua_State *L, lua_Debug *ar, const char *what) {
    dl_lua_ctl *c = dl_ctl(L);
    if (!c->timed_out) {
        c->timed_out = 1;
        if (ar != NULL) dl_copy_position(c->stop_src, &c->stop_line, ar);
        snprintf(c->stop_in, sizeof c->stop_in, "%s", what ? what : "");
    }
    if (lua_gethookcount(L) != 1) lua_sethook(L, dl_hook, LUA_MASKCOUNT, 1);
    luaL_where(L, what ? 1 : 0);
    lua_pushliteral(L, "time budget exceeded");
    lua_concat(L, 2);
    return lua_error(L);
}

/* Count hook: checks the shared deadline every DL_HOOK_COUNT instructions (every one once the
 * watchdog saw the deadline pass). Past it, the hook re-arms itself for every instruction and
 * raises on each one, so neither pcall nor a fresh coroutine (which inherits the hook and its
 * count) can keep the script going. */
static inline void dl_hook(lua_State *L, lua_Debug *ar) {
    dl_lua_ctl *c = dl_ctl(L);
    if (c->watch && __atomic_load_n(&c->watch->running, __ATOMIC_RELAXED) != L) {
        lua_pushthread(L);
        dl_name_running(L, L);
    }
    if (!c->timed_out) {
        if (c->deadline_ns == 0 || dl_now_ns() < c->deadline_ns) {
            if (lua_getinfo(L, "Sl", ar)) dl_copy_position(c->last_src, &c->last_line, ar);
            /* a coroutine re-armed by an earlier timeout goes back to the normal rate */
            if (lua_gethookcount(L) != DL_HOOK_COUNT) lua_sethook(L, dl_hook, LUA_MASKCOUNT, DL_HOOK_COUNT);
            return;
        }
        if (!lua_getinfo(L, "Sl", ar)) ar = NULL;
    }
    dl_raise_timeout(L, ar, NULL);
}

/* For C functions that can run long (pattern matching, table.move, sort): raises the timeout
 * at the Lua caller's line once the deadline has passed. Costs one clock read. */
static inline void dl_check_deadline(lua_State *L, const char *what) {
    dl_lua_ctl *c = dl_ctl(L);
    if (!c->timed_out && (c->deadline_ns == 0 || dl_now_ns() < c->deadline_ns)) return;
    lua_Debug ar;
    /* the first Lua frame: table.sort's comparator is called by sort, itself a C function */
    for (int level = 1; level < 10 && lua_getstack(L, level, &ar); level++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) dl_raise_timeout(L, &ar, what);
    }
    dl_raise_timeout(L, NULL, what);
}

/* The watchdog's side (another thread, while the Lua thread may be inside one long
 * instruction): once the deadline has passed, makes the running thread's count hook fire on
 * its next instruction. lua_sethook is written to be called asynchronously (from a signal
 * handler; ldebug.c); the pointers it writes are word-sized. Returns 1 when it poked. */
static inline int dl_watchdog_poke(dl_lua_ctl *c, int64_t now) {
    dl_watch *w = c->watch;
    int64_t deadline = __atomic_load_n(&c->deadline_ns, __ATOMIC_RELAXED);
    if (w == NULL || deadline == 0 || now < deadline || w->poked_ns == deadline) return 0;
    w->poked_ns = deadline;
    int poked = 0;
    __atomic_store_n(&w->poking, 1, __ATOMIC_SEQ_CST);
    lua_State *running = __atomic_load_n(&w->running, __ATOMIC_SEQ_CST);
    if (running != NULL) {
        lua_sethook(running, dl_hook, LUA_MASKCOUNT, 1);
        poked = 1;
    }
    __atomic_store_n(&w->poking, 0, __ATOMIC_SEQ_CST);
    return poked;
}

/* Puts the hook on a thread at the normal rate (the runtime calls it before each call). */
static inline void dl_arm_hook(lua_State *L) { lua_sethook(L, dl_hook, LUA_MASKCOUNT, DL_HOOK_COUNT); }

/* Writes "src:line" of the innermost frame of script code on L's stack (dlpipe's own chunks,
 * named "=dlpipe/...", are skipped) into buf; returns 0 when there is none. Reads the stack
 * only, allocates nothing: LuaCallMonitor calls it from another thread while L waits. */
static inline int dl_script_position(lua_State *L, char *buf, size_t size) {
    lua_Debug ar;
    for (int level = 0; level < 32 && lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        if (strncmp(ar.source, "=dlpipe/", 8) == 0) continue;
        snprintf(buf, size, "%s:%d", ar.short_src, ar.currentline);
        return 1;
    }
    return 0;
}

/* ---- Calling Swift from Lua ---- */
/* The Swift dispatcher: returns the number of results pushed, or a negative number after
 * pushing an error message. It never raises. */
typedef int (*dl_dispatch_fn)(lua_State *L);

/* The C function of every Swift closure exposed to Lua. Upvalue 1: the dispatcher (light
 * userdata); upvalue 2: the closure's id. Turns the cap off while Swift runs, and raises
 * the error itself so the longjmp starts here, below any Swift frame. */
static inline int dl_trampoline(lua_State *L) {
    dl_lua_ctl *c = dl_ctl(L);
    dl_dispatch_fn f = (dl_dispatch_fn)lua_touserdata(L, lua_upvalueindex(1));
    int saved = c->enforce;
    c->enforce = 0;
    int n = f(L);
    if (n < 0) {
        luaL_where(L, 1); /* "chunk:line: " of the Lua caller, as luaL_error does */
        lua_insert(L, -2);
        lua_concat(L, 2);
        c->enforce = saved;
        return lua_error(L);
    }
    c->enforce = saved;
    return n;
}

static inline void dl_push_swift_function(lua_State *L, dl_dispatch_fn f, lua_Integer id) {
    lua_pushlightuserdata(L, (void *)f);
    lua_pushinteger(L, id);
    lua_pushcclosure(L, dl_trampoline, 2);
}

/* ---- Message handler for the runtime's pcall ----
 * Makes the error object a readable string, records the first Lua frame (the position of a
 * memory error the script re-raised as a plain error) and stores a traceback in
 * registry["dl.traceback"]. Memory errors proper (LUA_ERRMEM) never reach it. */
static inline int dl_msgh(lua_State *L) {
    dl_lua_ctl *c = dl_ctl(L);
    lua_Debug ar;
    c->err_line = -1;
    c->err_src[0] = 0;
    for (int level = 1; level < 100 && lua_getstack(L, level, &ar); level++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
            dl_copy_position(c->err_src, &c->err_line, &ar);
            break;
        }
    }
    int t = lua_type(L, 1);
    if (t == LUA_TNUMBER) {
        lua_tostring(L, 1);
    } else if (t != LUA_TSTRING) {
        /* __tostring is script code: it runs under the cap and the budget */
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
            lua_replace(L, 1);
        } else {
            lua_settop(L, 1);
            lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
            lua_replace(L, 1);
        }
    }
    int saved = c->enforce;
    c->enforce = 0; /* our own bounded allocations must not turn into "error in error handling" */
    luaL_traceback(L, L, NULL, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "dl.traceback");
    c->enforce = saved;
    lua_settop(L, 1);
    return 1;
}

static inline void dl_push_msgh(lua_State *L) { lua_pushcfunction(L, dl_msgh); }

/* Environments, sandbox wrappers and library opening (they need the pieces above). */
#include "dl_lua_sandbox.h"

/* Creates a state on the capped allocator, with the control block in its extra space and
 * the count hook installed (coroutines inherit both). */
static inline lua_State *dl_newstate(dl_lua_ctl *c) {
    lua_State *L = lua_newstate(dl_lua_alloc, c);
    if (L == NULL) return NULL;
    *(dl_lua_ctl **)lua_getextraspace(L) = c;
    lua_pushthread(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "dl.running"); /* the slot dl_name_running assigns */
    dl_arm_hook(L);
    return L;
}

/* Clears the positions recorded by the previous call and takes the called function's
 * definition (at stack index idx) as the fallback position for a memory error. */
static inline void dl_begin_positions(lua_State *L, int idx) {
    dl_lua_ctl *c = dl_ctl(L);
    lua_Debug ar;
    c->err_line = c->stop_line = c->last_line = -1;
    c->err_src[0] = c->stop_src[0] = c->last_src[0] = c->stop_in[0] = 0;
    dl_set_running(c, L);
    if (lua_type(L, idx) != LUA_TFUNCTION) return;
    lua_pushvalue(L, idx);
    if (lua_getinfo(L, ">S", &ar)) {
        memcpy(c->last_src, ar.short_src, LUA_IDSIZE);
        c->last_line = ar.linedefined;
    }
}

/* Loads a text chunk; binary chunks are refused whatever the caller wants. */
static inline int dl_load_text(lua_State *L, const char *buf, size_t len, const char *name) {
    return luaL_loadbufferx(L, buf, len, name, "t");
}

#endif
