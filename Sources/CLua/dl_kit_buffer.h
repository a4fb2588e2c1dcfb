// A growable byte buffer for the script kit's C functions (dl_kit.h), held by a userdata so
// that an error raised half-way (the time budget, bad input, a refused allocation) frees it:
// the userdata is a to-be-closed slot of the running C function, and its __gc frees it too.
// Its bytes come from the state's allocator, so they count against the memory cap like any
// Lua string (luaL_Buffer cannot be used while other values come and go on the stack, which
// table walks need).
#ifndef DL_KIT_BUFFER_H
#define DL_KIT_BUFFER_H

typedef struct dl_kit_buf {
    char *p;
    size_t n, cap;
    lua_Alloc alloc;
    void *ud;
} dl_kit_buf;

static inline int dl_kit_buf_free(lua_State *L) {
    dl_kit_buf *b = (dl_kit_buf *)luaL_checkudata(L, 1, "dl.kit.buf");
    if (b->p != NULL) b->alloc(b->ud, b->p, b->cap, 0);
    b->p = NULL;
    b->n = b->cap = 0;
    return 0;
}

/* Gives the userdata on top of the stack the metatable `name` (made once per state), whose
 * __gc and __close both run `release`, and marks its slot to-be-closed: what it holds is
 * released when the C function returns or raises, or at the latest when it is collected. */
static inline void dl_kit_closing(lua_State *L, const char *name, lua_CFunction release) {
    if (luaL_newmetatable(L, name)) {
        lua_pushcfunction(L, release);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, release);
        lua_setfield(L, -2, "__close");
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "__metatable");
    }
    lua_setmetatable(L, -2);
    lua_toclose(L, -1);
}

/* Pushes a new empty buffer, marked to-be-closed, and returns it. */
static inline dl_kit_buf *dl_kit_buf_new(lua_State *L) {
    dl_kit_buf *b = (dl_kit_buf *)lua_newuserdatauv(L, sizeof(dl_kit_buf), 0);
    memset(b, 0, sizeof *b);
    b->alloc = lua_getallocf(L, &b->ud);
    dl_kit_closing(L, "dl.kit.buf", dl_kit_buf_free);
    return b;
}

/* Makes room for `more` bytes; a refusal of the allocator (the memory cap) is a memory error. */
static inline char *dl_kit_buf_reserve(lua_State *L, dl_kit_buf *b, size_t more) {
    if (b->cap - b->n >= more) return b->p + b->n;
    if (more > ((size_t)1 << 46) - b->n) luaL_error(L, "string too large");
    size_t want = b->cap < 256 ? 256 : b->cap;
    while (want - b->n < more) want *= 2;
    char *p = (char *)b->alloc(b->ud, b->p, b->p ? b->cap : 0, want);
    if (p == NULL) {
        lua_pushliteral(L, "not enough memory"); /* lua_error makes this exact text a LUA_ERRMEM */
        lua_error(L);
    }
    b->p = p;
    b->cap = want;
    return b->p + b->n;
}

static inline void dl_kit_buf_add(lua_State *L, dl_kit_buf *b, const char *s, size_t len) {
    if (len == 0) return;
    memcpy(dl_kit_buf_reserve(L, b, len), s, len);
    b->n += len;
}

static inline void dl_kit_buf_addchar(lua_State *L, dl_kit_buf *b, char ch) {
    *dl_kit_buf_reserve(L, b, 1) = ch;
    b->n += 1;
}

/* Appends the UTF-8 encoding of code point `cp` (at most U+10FFFF). */
static inline void dl_kit_buf_addutf8(lua_State *L, dl_kit_buf *b, unsigned long cp) {
    char out[4];
    size_t n;
    if (cp < 0x80) { out[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    dl_kit_buf_add(L, b, out, n);
}

/* Bytes the state may still allocate under the memory cap (all of them when no cap is enforced). */
static inline size_t dl_kit_room(lua_State *L) {
    dl_lua_ctl *c = dl_ctl(L);
    if (!c->enforce) return (size_t)-1;
    return c->limit > c->in_use ? c->limit - c->in_use : 0;
}

/* "line L, column C" of byte offset `at` in `s` (1-based), for parse errors. */
static inline void dl_kit_position(const char *s, size_t at, size_t *line, size_t *column) {
    *line = 1;
    size_t start = 0;
    for (size_t i = 0; i < at; i++) {
        if (s[i] == '\n') { (*line)++; start = i + 1; }
    }
    *column = at - start + 1;
}

#endif
