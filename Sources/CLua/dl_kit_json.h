// dl.json.decode and dl.json.encode: JSON (RFC 8259) in C over the Lua API, linear in the
// input (decode) or the output (encode), with the time budget checked as they go and every
// byte allocated under the memory cap. Written here rather than taken from Debian's lua-cjson
// 2.1.0, which predates Lua 5.3's integers (it decodes 1 as 1.0 and encodes 2^53 with 14
// digits, as 9.007199254741e+15) and grows its buffers with malloc, outside the cap.
//
// Decoding: objects and arrays become tables; null is dl.json.null (a light userdata, so a
// key whose value is null is still there); integers that fit 64 bits become Lua integers,
// every other number a float (a larger integer keeps its first 17 significant digits);
// \uXXXX escapes are decoded to UTF-8, surrogate pairs joined, a lone surrogate becomes
// U+FFFD. Nesting deeper than DL_JSON_MAX_DEPTH is an error, as is anything after the value.
#ifndef DL_KIT_JSON_H
#define DL_KIT_JSON_H
#include <math.h>
#include <errno.h>

#define DL_JSON_MAX_DEPTH 512
/* Values decoded or encoded between two reads of the clock. */
#define DL_JSON_CHECK_EVERY 4096u

typedef struct dl_json_dec {
    lua_State *L;
    const char *s, *p, *end;
    unsigned steps;
    int depth;
} dl_json_dec;

static inline int dl_json_fail(dl_json_dec *d, const char *what) {
    size_t at = (size_t)(d->p - d->s), line, column;
    dl_kit_position(d->s, at, &line, &column);
    if (d->p >= d->end)
        return luaL_error(d->L, "dl.json.decode: %s at the end of the text (line %d, column %d)", what,
                          (int)line, (int)column);
    unsigned char ch = (unsigned char)*d->p;
    if (ch >= 0x20 && ch < 0x7F)
        return luaL_error(d->L, "dl.json.decode: %s at line %d, column %d (byte %d, '%c')", what, (int)line,
                          (int)column, (int)at + 1, ch);
    char byte[8]; /* lua_pushfstring has no %x */
    snprintf(byte, sizeof byte, "0x%02x", ch);
    return luaL_error(d->L, "dl.json.decode: %s at line %d, column %d (byte %d, %s)", what, (int)line,
                      (int)column, (int)at + 1, byte);
}

static inline void dl_json_skip_space(dl_json_dec *d) {
    while (d->p < d->end && (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r')) d->p++;
}

static inline void dl_json_step(dl_json_dec *d) {
    if (++d->steps % DL_JSON_CHECK_EVERY == 0) dl_check_deadline(d->L, "dl.json.decode");
}

static inline int dl_json_hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    return v;
}

/* Pushes the string that starts after the opening quote at d->p. */
static inline void dl_json_string(dl_json_dec *d) {
    const char *start = ++d->p;
    /* The usual string has no escape: pushed straight from the input. */
    while (d->p < d->end && *d->p != '"' && *d->p != '\\' && (unsigned char)*d->p >= 0x20) d->p++;
    if (d->p < d->end && *d->p == '"') {
        lua_pushlstring(d->L, start, (size_t)(d->p - start));
        d->p++;
        return;
    }
    dl_kit_buf *b = dl_kit_buf_new(d->L);
    dl_kit_buf_add(d->L, b, start, (size_t)(d->p - start));
    for (;;) {
        if (d->p >= d->end) dl_json_fail(d, "unterminated string");
        unsigned char c = (unsigned char)*d->p;
        if (c == '"') break;
        if (c < 0x20) dl_json_fail(d, "control character in a string (escape it)");
        if (c != '\\') {
            const char *run = d->p;
            while (d->p < d->end && *d->p != '"' && *d->p != '\\' && (unsigned char)*d->p >= 0x20) d->p++;
            dl_kit_buf_add(d->L, b, run, (size_t)(d->p - run));
            continue;
        }
        if (d->end - d->p < 2) { d->p++; dl_json_fail(d, "unterminated string"); }
        char e = d->p[1];
        const char *simple = NULL;
        switch (e) {
        case '"': simple = "\""; break;
        case '\\': simple = "\\"; break;
        case '/': simple = "/"; break;
        case 'b': simple = "\b"; break;
        case 'f': simple = "\f"; break;
        case 'n': simple = "\n"; break;
        case 'r': simple = "\r"; break;
        case 't': simple = "\t"; break;
        case 'u': break;
        default: d->p++; dl_json_fail(d, "unknown escape in a string");
        }
        if (simple) {
            dl_kit_buf_addchar(d->L, b, *simple);
            d->p += 2;
            continue;
        }
        int hi = d->end - d->p >= 6 ? dl_json_hex4(d->p + 2) : -1;
        if (hi < 0) dl_json_fail(d, "\\u wants four hex digits");
        d->p += 6;
        unsigned long cp = (unsigned long)hi;
        if (hi >= 0xD800 && hi <= 0xDBFF) {
            int lo = (d->end - d->p >= 6 && d->p[0] == '\\' && d->p[1] == 'u') ? dl_json_hex4(d->p + 2) : -1;
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + (((unsigned long)hi - 0xD800) << 10) + ((unsigned long)lo - 0xDC00);
                d->p += 6;
            } else {
                cp = 0xFFFD; /* a lone high surrogate */
            }
        } else if (hi >= 0xDC00 && hi <= 0xDFFF) {
            cp = 0xFFFD; /* a lone low surrogate */
        }
        dl_kit_buf_addutf8(d->L, b, cp);
    }
    d->p++;
    lua_pushlstring(d->L, b->p ? b->p : "", b->n);
    lua_closeslot(d->L, -2);
    lua_remove(d->L, -2);
}

static inline void dl_json_number(dl_json_dec *d) {
    const char *start = d->p;
    int integer = 1;
    if (d->p < d->end && *d->p == '-') d->p++;
    if (d->p >= d->end || !(*d->p >= '0' && *d->p <= '9')) dl_json_fail(d, "a number wants a digit");
    if (*d->p == '0') {
        d->p++;
        if (d->p < d->end && *d->p >= '0' && *d->p <= '9') dl_json_fail(d, "a number may not start with 0");
    } else {
        while (d->p < d->end && *d->p >= '0' && *d->p <= '9') d->p++;
    }
    if (d->p < d->end && *d->p == '.') {
        integer = 0;
        d->p++;
        if (d->p >= d->end || !(*d->p >= '0' && *d->p <= '9')) dl_json_fail(d, "a fraction wants a digit");
        while (d->p < d->end && *d->p >= '0' && *d->p <= '9') d->p++;
    }
    if (d->p < d->end && (*d->p == 'e' || *d->p == 'E')) {
        integer = 0;
        d->p++;
        if (d->p < d->end && (*d->p == '+' || *d->p == '-')) d->p++;
        if (d->p >= d->end || !(*d->p >= '0' && *d->p <= '9')) dl_json_fail(d, "an exponent wants a digit");
        while (d->p < d->end && *d->p >= '0' && *d->p <= '9') d->p++;
    }
    size_t len = (size_t)(d->p - start);
    char small[64];
    char *text = small;
    dl_kit_buf *b = NULL;
    if (len >= sizeof small) { /* a very long number: copied to a buffer of its own */
        b = dl_kit_buf_new(d->L);
        dl_kit_buf_add(d->L, b, start, len);
        dl_kit_buf_addchar(d->L, b, 0);
        text = b->p;
    } else {
        memcpy(small, start, len);
        small[len] = 0;
    }
    if (integer) {
        errno = 0;
        char *stop;
        long long v = strtoll(text, &stop, 10);
        if (errno == 0 && *stop == 0) {
            if (b) { lua_closeslot(d->L, -1); lua_pop(d->L, 1); }
            lua_pushinteger(d->L, (lua_Integer)v);
            return;
        }
    }
    double v = strtod(text, NULL); /* the C locale: '.' is the decimal point */
    if (b) { lua_closeslot(d->L, -1); lua_pop(d->L, 1); }
    lua_pushnumber(d->L, (lua_Number)v);
}

static inline int dl_json_literal(dl_json_dec *d, const char *word, size_t len) {
    if ((size_t)(d->end - d->p) >= len && memcmp(d->p, word, len) == 0) {
        d->p += len;
        return 1;
    }
    return 0;
}

static inline void dl_json_value(dl_json_dec *d);

static inline void dl_json_container(dl_json_dec *d, int object) {
    if (++d->depth > DL_JSON_MAX_DEPTH) dl_json_fail(d, "nested deeper than 512 arrays and objects");
    if (!lua_checkstack(d->L, 6)) dl_json_fail(d, "Lua stack exhausted");
    d->p++;
    lua_createtable(d->L, 0, 0);
    dl_json_skip_space(d);
    char close = object ? '}' : ']';
    if (d->p < d->end && *d->p == close) {
        d->p++;
        d->depth--;
        return;
    }
    lua_Integer index = 1;
    for (;;) {
        dl_json_skip_space(d);
        if (object) {
            if (d->p >= d->end || *d->p != '"') dl_json_fail(d, "an object key must be a string");
            dl_json_string(d);
            dl_json_skip_space(d);
            if (d->p >= d->end || *d->p != ':') dl_json_fail(d, "':' expected after an object key");
            d->p++;
            dl_json_value(d);
            lua_rawset(d->L, -3);
        } else {
            dl_json_value(d);
            lua_rawseti(d->L, -2, index++);
        }
        dl_json_skip_space(d);
        if (d->p < d->end && *d->p == ',') { d->p++; continue; }
        if (d->p < d->end && *d->p == close) { d->p++; break; }
        dl_json_fail(d, object ? "',' or '}' expected in an object" : "',' or ']' expected in an array");
    }
    d->depth--;
}

static inline void dl_json_value(dl_json_dec *d) {
    dl_json_step(d);
    dl_json_skip_space(d);
    if (d->p >= d->end) dl_json_fail(d, "a value expected");
    switch (*d->p) {
    case '{': dl_json_container(d, 1); return;
    case '[': dl_json_container(d, 0); return;
    case '"': dl_json_string(d); return;
    case 't': if (dl_json_literal(d, "true", 4)) { lua_pushboolean(d->L, 1); return; } break;
    case 'f': if (dl_json_literal(d, "false", 5)) { lua_pushboolean(d->L, 0); return; } break;
    case 'n': if (dl_json_literal(d, "null", 4)) { lua_pushlightuserdata(d->L, NULL); return; } break;
    default:
        if (*d->p == '-' || (*d->p >= '0' && *d->p <= '9')) { dl_json_number(d); return; }
    }
    dl_json_fail(d, "unexpected character");
}

/* dl.json.decode(text) */
static inline int dl_kit_json_decode(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    dl_json_dec d = {L, s, s, s + len, 0, 0};
    if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) d.p += 3; /* a UTF-8 byte order mark */
    dl_json_value(&d);
    dl_json_skip_space(&d);
    if (d.p < d.end) dl_json_fail(&d, "text after the value");
    return 1;
}

/* ---- encoding ---- */

typedef struct dl_json_enc {
    lua_State *L;
    dl_kit_buf *b;
    unsigned steps;
    int depth;
} dl_json_enc;

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one. */
static inline size_t dl_utf8_len(const unsigned char *p, size_t left) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    size_t n;
    unsigned long cp;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if (left < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

static inline void dl_json_put_string(dl_json_enc *e, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    dl_kit_buf_addchar(e->L, e->b, '"');
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned char c = p[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            size_t j = i;
            while (j < len && p[j] >= 0x20 && p[j] != '"' && p[j] != '\\' && p[j] < 0x80) j++;
            dl_kit_buf_add(e->L, e->b, s + i, j - i);
            i = j;
            continue;
        }
        if (c >= 0x80) {
            size_t n = dl_utf8_len(p + i, len - i);
            if (n == 0) {
                char byte[8];
                snprintf(byte, sizeof byte, "0x%02x", c);
                luaL_error(e->L, "dl.json.encode: a string is not valid UTF-8 (byte %d is %s)", (int)i + 1, byte);
            }
            dl_kit_buf_add(e->L, e->b, s + i, n);
            i += n;
            continue;
        }
        char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
        size_t n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0'; esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
            n = 6;
        }
        dl_kit_buf_add(e->L, e->b, esc, n);
        i++;
    }
    dl_kit_buf_addchar(e->L, e->b, '"');
}

static inline void dl_json_put_number(dl_json_enc *e, int index) {
    char out[40];
    int n;
    if (lua_isinteger(e->L, index)) {
        n = snprintf(out, sizeof out, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointegerx(e->L, index, NULL));
    } else {
        double v = (double)lua_tonumberx(e->L, index, NULL);
        if (!isfinite(v)) luaL_error(e->L, "dl.json.encode: %s has no JSON form", isnan(v) ? "NaN" : "an infinite number");
        /* The shortest of 15, 16 or 17 digits that reads back as the same number. */
        for (int digits = 15; digits <= 17; digits++) {
            n = snprintf(out, sizeof out, "%.*g", digits, v);
            if (strtod(out, NULL) == v) break;
        }
    }
    dl_kit_buf_add(e->L, e->b, out, (size_t)n);
}

typedef struct dl_json_key {
    const char *s;
    size_t len;
    int slot; /* where the original key is, in the key table */
} dl_json_key;

static inline int dl_json_key_cmp(const void *a, const void *b) {
    const dl_json_key *x = (const dl_json_key *)a, *y = (const dl_json_key *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c != 0) return c;
    return x->len < y->len ? -1 : (x->len > y->len);
}

static inline void dl_json_put(dl_json_enc *e, int index);

/* The table at `index` as an array (keys exactly 1..n, n >= 1) or an object with sorted keys. */
static inline void dl_json_put_table(dl_json_enc *e, int index) {
    lua_State *L = e->L;
    if (++e->depth > DL_JSON_MAX_DEPTH)
        luaL_error(L, "dl.json.encode: tables nested deeper than 512 (a table that contains itself?)");
    if (!lua_checkstack(L, 8)) luaL_error(L, "dl.json.encode: Lua stack exhausted");
    lua_Integer n = (lua_Integer)lua_rawlen(L, index);
    lua_Integer count = 0;
    int keys_are_strings = 1;
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
        count++;
        lua_pop(L, 1);
        int t = lua_type(L, -1);
        if (t != LUA_TSTRING) keys_are_strings = 0;
    }
    int array = n > 0 && count == n;
    for (lua_Integer i = 1; array && i <= n; i++) {
        if (lua_rawgeti(L, index, i) == LUA_TNIL) array = 0;
        lua_pop(L, 1);
    }
    if (array) {
        dl_kit_buf_addchar(L, e->b, '[');
        for (lua_Integer i = 1; i <= n; i++) {
            if (i > 1) dl_kit_buf_addchar(L, e->b, ',');
            lua_rawgeti(L, index, i);
            dl_json_put(e, lua_gettop(L));
            lua_pop(L, 1);
        }
        dl_kit_buf_addchar(L, e->b, ']');
        e->depth--;
        return;
    }
    (void)keys_are_strings;
    /* Keys as text, each beside its original key, in a table that anchors the strings. */
    if (count > 0x3FFFFFFF) luaL_error(L, "dl.json.encode: table too large");
    lua_createtable(L, (int)(2 * count), 0);
    int keys = lua_gettop(L);
    int slot = 0;
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
        lua_pop(L, 1);
        int t = lua_type(L, -1);
        if (t == LUA_TSTRING) {
            lua_pushvalue(L, -1);
        } else if (t == LUA_TNUMBER && lua_isinteger(L, -1)) {
            lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointegerx(L, -1, NULL));
        } else {
            luaL_error(L, "dl.json.encode: a %s key has no JSON form (keys are strings or integers)", luaL_typename(L, -1));
        }
        lua_rawseti(L, keys, ++slot);
        lua_pushvalue(L, -1);
        lua_rawseti(L, keys, ++slot);
    }
    dl_json_key *sorted = (dl_json_key *)lua_newuserdatauv(L, sizeof(dl_json_key) * (size_t)(count ? count : 1), 0);
    for (int i = 0; i < (int)count; i++) {
        lua_rawgeti(L, keys, 2 * i + 1);
        sorted[i].s = lua_tolstring(L, -1, &sorted[i].len); /* anchored in `keys` */
        sorted[i].slot = 2 * i + 2;
        lua_pop(L, 1);
    }
    qsort(sorted, (size_t)count, sizeof *sorted, dl_json_key_cmp);
    dl_kit_buf_addchar(L, e->b, '{');
    for (int i = 0; i < (int)count; i++) {
        if (i > 0) dl_kit_buf_addchar(L, e->b, ',');
        dl_json_put_string(e, sorted[i].s, sorted[i].len);
        dl_kit_buf_addchar(L, e->b, ':');
        lua_rawgeti(L, keys, sorted[i].slot);
        lua_rawget(L, index);
        dl_json_put(e, lua_gettop(L));
        lua_pop(L, 1);
    }
    dl_kit_buf_addchar(L, e->b, '}');
    lua_pop(L, 2);
    e->depth--;
}

static inline void dl_json_put(dl_json_enc *e, int index) {
    if (++e->steps % DL_JSON_CHECK_EVERY == 0) dl_check_deadline(e->L, "dl.json.encode");
    switch (lua_type(e->L, index)) {
    case LUA_TNIL: dl_kit_buf_add(e->L, e->b, "null", 4); return;
    case LUA_TBOOLEAN:
        if (lua_toboolean(e->L, index)) dl_kit_buf_add(e->L, e->b, "true", 4);
        else dl_kit_buf_add(e->L, e->b, "false", 5);
        return;
    case LUA_TNUMBER: dl_json_put_number(e, index); return;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(e->L, index, &len);
        dl_json_put_string(e, s, len);
        return;
    }
    case LUA_TTABLE: dl_json_put_table(e, index); return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(e->L, index) == NULL) { dl_kit_buf_add(e->L, e->b, "null", 4); return; }
        /* fall through */
    default:
        luaL_error(e->L, "dl.json.encode: a %s value has no JSON form", luaL_typename(e->L, index));
    }
}

/* dl.json.encode(value) */
static inline int dl_kit_json_encode(lua_State *L) {
    luaL_checkany(L, 1);
    lua_settop(L, 1);
    dl_json_enc e = {L, NULL, 0, 0};
    e.b = dl_kit_buf_new(L);
    dl_json_put(&e, 1);
    lua_pushlstring(L, e.b->p ? e.b->p : "", e.b->n);
    return 1;
}

#endif
