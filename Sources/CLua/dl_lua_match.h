// The sandbox's string.find, string.match, string.gmatch and string.gsub: dlpipe's own Lua
// pattern matcher, written from the definition of patterns in the Lua 5.4 reference manual
// (section 6.4.1) and the manual's description of the four functions.
//
// Why our own: a library function runs inside one C call, where the count hook never fires.
// A backtracking pattern (`a*b` over 100,000 `a`s, `.-.-.-...b`) could keep a handler, and the
// whole run, busy for hours. This matcher counts its work and reads the clock every
// DL_PM_CHECK_EVERY steps, raising the time budget's error at the caller's line. A plain find
// (`plain` set, or a pattern without special characters) is glibc's memmem: linear.
//
// How it works: the pattern is first translated into a program, a list of items (one
// character class with its repetition, a capture opening or closing, %b, %f, a
// back-reference, the `$` anchor). Every single-character class (`.`, `%a`, `[...]`) becomes
// a 256-bit membership map, so testing a character is one bit read. A backtracking matcher
// then walks the items, recursing only where it must remember a choice (a repetition with
// several lengths left to try, a `?`, a capture to undo).
//
// What must equal stock Lua 5.4 exactly, and is tested against it
// (Tests/DLPipeLuaTests/LuaPatternDifferentialTests.swift):
//   - Results, captures and position captures, `init` handling, gmatch and gsub's rule that an
//     empty match right where the previous match ended does not count.
//   - Errors, word for word, and when they happen: Lua reports a malformed part of a pattern
//     only when matching reaches it (`("b"):find("a%")` is nil, `("a"):find("a%")` an error).
//     The translation therefore stops at the first malformed part and leaves an item there
//     that raises the error when the matcher arrives at it.
//   - "pattern too complex": Lua allows 200 nested matching calls. The matcher recurses at
//     the same places, so the same patterns hit the same limit (it also bounds the C stack).
#ifndef DL_LUA_MATCH_H
#define DL_LUA_MATCH_H
#include <ctype.h>

/* glibc declares memmem only under _GNU_SOURCE, which the module's string.h was not built with. */
extern void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);

/* Steps (items entered, characters scanned) between two reads of the clock. */
#define DL_PM_CHECK_EVERY 16384u
/* Nested matching calls allowed, as in Lua ("pattern too complex" past it). */
#define DL_PM_MAX_DEPTH 200
/* Captures a pattern may open, as in Lua ("too many captures" past it). */
#define DL_PM_MAX_CAPTURES 32
/* A program this small lives on the C stack; a larger one in a userdata. */
#define DL_PM_LOCAL_ITEMS 64
#define DL_PM_LOCAL_MAPS 16

/* ---- The program ---- */
enum {
    DL_PM_BYTE,     /* one given byte (a), repeated per `rep` */
    DL_PM_ANY,      /* `.`: any byte, repeated per `rep` */
    DL_PM_MAP,      /* a class or a set: a byte of map `map`, repeated per `rep` */
    DL_PM_OPEN,     /* `(`: opens capture a */
    DL_PM_POSITION, /* `()`: capture a is the current position */
    DL_PM_CLOSE,    /* `)`: closes capture a (the innermost one still open) */
    DL_PM_BALANCE,  /* %bxy: a = x, b = y */
    DL_PM_FRONTIER, /* %f[set]: between a byte outside map `map` and a byte inside it */
    DL_PM_BACKREF,  /* %1-%9: the text capture a matched */
    DL_PM_AT_END,   /* `$` as the pattern's last character */
    DL_PM_FAIL,     /* a malformed part: raises the program's error when reached */
    DL_PM_DONE      /* the end of the pattern: a match */
};

typedef struct dl_pm_item {
    unsigned char op;  /* DL_PM_* */
    unsigned char rep; /* for BYTE, ANY, MAP: 0 (exactly once), '*', '+', '-' or '?' */
    unsigned char a, b;
    unsigned map;      /* for MAP and FRONTIER: index into the program's maps */
} dl_pm_item;

typedef unsigned char dl_pm_map[32]; /* bit c set: byte c is in the class */

typedef struct dl_pm_prog {
    dl_pm_item *items; /* NULL while counting */
    dl_pm_map *maps;
    size_t nitems, nmaps;
    const char *fail;  /* the error of the FAIL item (a format taking fail_arg), if any */
    int fail_arg;
} dl_pm_prog;

static inline int dl_pm_has(const dl_pm_map m, unsigned char c) { return (m[c >> 3] >> (c & 7)) & 1; }
static inline void dl_pm_put(dl_pm_map m, unsigned char c) { m[c >> 3] |= (unsigned char)(1u << (c & 7)); }

/* The bytes of each class, %a %c %d %g %l %p %s %u %w %x %z, as the C locale has them (no
 * byte above 127 is in any): made once here, not from the ctype functions on every compile,
 * which was most of a dl.add's cost (256 calls per class per pattern compiled). */
static const dl_pm_map dl_pm_class_bits[] = {
    /* %a */ {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0x07, 0xfe, 0xff, 0xff, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %c */ {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %d */ {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %g */ {0x00, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %l */ {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %p */ {0x00, 0x00, 0x00, 0x00, 0xfe, 0xff, 0x00, 0xfc, 0x01, 0x00, 0x00, 0xf8, 0x01, 0x00, 0x00, 0x78, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %s */ {0x00, 0x3e, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %u */ {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %w */ {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x03, 0xfe, 0xff, 0xff, 0x07, 0xfe, 0xff, 0xff, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %x */ {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x03, 0x7e, 0x00, 0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* %z */ {0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
};

/* Adds %x to m for the class letter x. A letter the manual does not define (and any other
 * character) stands for itself; an upper-case class letter is the complement of its
 * lower-case class. %z (the NUL byte) is an old class Lua 5.4 still accepts. */
static inline void dl_pm_add_class(dl_pm_map m, unsigned char letter) {
    static const char letters[] = "acdglpsuwxz";
    unsigned char lower = (unsigned char)tolower(letter);
    const char *found = lower != 0 ? strchr(letters, lower) : NULL;
    if (found == NULL) {
        dl_pm_put(m, letter);
        return;
    }
    const unsigned char *bits = dl_pm_class_bits[found - letters];
    int complement = isupper(letter) != 0;
    for (int i = 0; i < 32; i++) m[i] |= complement ? (unsigned char)~bits[i] : bits[i];
}

/* Reads the set that starts with `[` at p[*at]: on success moves *at past its `]` and, when
 * m is given, fills m. The first character after `[` (or `[^`) is part of the set even when
 * it is `]`; `%` escapes the next character. Returns 0 when no `]` closes the set. */
static inline int dl_pm_read_set(const char *p, size_t n, size_t *at, unsigned char *m) {
    size_t k = *at + 1;
    int complement = k < n && p[k] == '^';
    if (complement) k++;
    size_t body = k;
    do {
        if (k >= n) return 0;
        if (p[k++] == '%' && k < n) k++;
    } while (k >= n || p[k] != ']');
    size_t close = k;
    *at = close + 1;
    if (m == NULL) return 1;
    memset(m, 0, sizeof(dl_pm_map));
    for (size_t j = body; j < close; j++) {
        unsigned char c = (unsigned char)p[j];
        if (c == '%') {
            dl_pm_add_class(m, (unsigned char)p[++j]);
        } else if (j + 2 < close && p[j + 1] == '-') { /* a range; `-` first or last is itself */
            for (unsigned x = c; x <= (unsigned char)p[j + 2]; x++) dl_pm_put(m, (unsigned char)x);
            j += 2;
        } else {
            dl_pm_put(m, c);
        }
    }
    if (complement)
        for (int i = 0; i < 32; i++) m[i] = (unsigned char)~m[i];
    return 1;
}

/* Appends an item (counts it only while g->items is NULL); returns it, or NULL while counting. */
static inline dl_pm_item *dl_pm_emit(dl_pm_prog *g, unsigned char op) {
    dl_pm_item *it = g->items ? &g->items[g->nitems] : NULL;
    g->nitems++;
    if (it) {
        memset(it, 0, sizeof *it);
        it->op = op;
    }
    return it;
}

/* A fresh map for an item; NULL while counting. */
static inline unsigned char *dl_pm_new_map(dl_pm_prog *g, dl_pm_item *it) {
    if (it) it->map = (unsigned)g->nmaps;
    return g->maps ? g->maps[g->nmaps++] : (g->nmaps++, NULL);
}

static inline void dl_pm_emit_fail(dl_pm_prog *g, const char *message, int arg) {
    dl_pm_emit(g, DL_PM_FAIL);
    g->fail = message;
    g->fail_arg = arg;
}

/* Translates pattern p (its anchor `^`, if any, already taken off by the caller) into g. Run
 * twice: with g->items NULL it only counts the items and maps the second run writes. Never
 * raises: a malformed part becomes a FAIL item and ends the program. */
static inline void dl_pm_compile(const char *p, size_t n, dl_pm_prog *g) {
    int opened = 0;                          /* captures opened so far */
    unsigned char closed[DL_PM_MAX_CAPTURES]; /* which of them are closed */
    g->nitems = g->nmaps = 0;
    g->fail = NULL;
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)p[i];
        dl_pm_item *it;
        if (c == '(') {
            if (opened >= DL_PM_MAX_CAPTURES) return dl_pm_emit_fail(g, "too many captures", 0);
            int position = i + 1 < n && p[i + 1] == ')';
            it = dl_pm_emit(g, position ? DL_PM_POSITION : DL_PM_OPEN);
            if (it) it->a = (unsigned char)opened;
            closed[opened++] = (unsigned char)position;
            i += position ? 2 : 1;
            continue;
        }
        if (c == ')') {
            int which = opened - 1;
            while (which >= 0 && closed[which]) which--;
            if (which < 0) return dl_pm_emit_fail(g, "invalid pattern capture", 0);
            it = dl_pm_emit(g, DL_PM_CLOSE);
            if (it) it->a = (unsigned char)which;
            closed[which] = 1;
            i++;
            continue;
        }
        if (c == '$' && i + 1 == n) {
            dl_pm_emit(g, DL_PM_AT_END);
            i++;
            continue;
        }
        if (c == '%' && i + 1 < n) {
            unsigned char e = (unsigned char)p[i + 1];
            if (e == 'b') {
                if (i + 3 >= n) return dl_pm_emit_fail(g, "malformed pattern (missing arguments to '%%b')", 0);
                it = dl_pm_emit(g, DL_PM_BALANCE);
                if (it) {
                    it->a = (unsigned char)p[i + 2];
                    it->b = (unsigned char)p[i + 3];
                }
                i += 4;
                continue;
            }
            if (e == 'f') {
                size_t at = i + 2, after = at;
                if (at >= n || p[at] != '[') return dl_pm_emit_fail(g, "missing '[' after '%%f' in pattern", 0);
                if (!dl_pm_read_set(p, n, &after, NULL)) return dl_pm_emit_fail(g, "malformed pattern (missing ']')", 0);
                it = dl_pm_emit(g, DL_PM_FRONTIER);
                unsigned char *m = dl_pm_new_map(g, it);
                if (m) dl_pm_read_set(p, n, &at, m);
                i = after;
                continue;
            }
            if (isdigit(e)) {
                int which = e - '1';
                if (which < 0 || which >= opened || !closed[which])
                    return dl_pm_emit_fail(g, "invalid capture index %%%d", which + 1);
                it = dl_pm_emit(g, DL_PM_BACKREF);
                if (it) it->a = (unsigned char)which;
                i += 2;
                continue;
            }
        }
        /* one character class, perhaps with a repetition */
        size_t next;
        unsigned char *m = NULL;
        if (c == '.') {
            it = dl_pm_emit(g, DL_PM_ANY);
            next = i + 1;
        } else if (c == '%') {
            if (i + 1 >= n) return dl_pm_emit_fail(g, "malformed pattern (ends with '%%')", 0);
            it = dl_pm_emit(g, DL_PM_MAP);
            m = dl_pm_new_map(g, it);
            if (m) {
                memset(m, 0, sizeof(dl_pm_map));
                dl_pm_add_class(m, (unsigned char)p[i + 1]);
            }
            next = i + 2;
        } else if (c == '[') {
            next = i;
            if (!dl_pm_read_set(p, n, &next, NULL)) return dl_pm_emit_fail(g, "malformed pattern (missing ']')", 0);
            it = dl_pm_emit(g, DL_PM_MAP);
            m = dl_pm_new_map(g, it);
            size_t at = i;
            if (m) dl_pm_read_set(p, n, &at, m);
        } else {
            it = dl_pm_emit(g, DL_PM_BYTE);
            if (it) it->a = c;
            next = i + 1;
        }
        if (next < n && (p[next] == '*' || p[next] == '+' || p[next] == '-' || p[next] == '?')) {
            if (it) it->rep = (unsigned char)p[next];
            next++;
        }
        i = next;
    }
    dl_pm_emit(g, DL_PM_DONE);
}

/* ---- The matcher ---- */
typedef struct dl_pm_capture {
    const char *at;
    ptrdiff_t len; /* DL_PM_OPEN_CAP while open, DL_PM_POS_CAP for a position capture */
} dl_pm_capture;
#define DL_PM_OPEN_CAP ((ptrdiff_t)-1)
#define DL_PM_POS_CAP ((ptrdiff_t)-2)

typedef struct dl_pm_state {
    const dl_pm_prog *g;
    const char *src, *end; /* the subject */
    lua_State *L;
    const char *what;      /* the function, for the time budget's error ("string.find") */
    unsigned work;         /* steps since the clock was last read */
    int depth_left;        /* nested matching calls still allowed */
    int ncap;              /* captures opened on the current path */
    dl_pm_capture cap[DL_PM_MAX_CAPTURES];
} dl_pm_state;

/* Counts `steps` of work; every DL_PM_CHECK_EVERY of them, checks the running call's deadline
 * (dl_check_deadline raises the budget's error at the Lua caller's line). */
static inline void dl_pm_work(dl_pm_state *st, size_t steps) {
    if (steps < DL_PM_CHECK_EVERY - st->work) {
        st->work += (unsigned)steps;
        return;
    }
    st->work = 0;
    dl_check_deadline(st->L, st->what);
}

static inline int dl_pm_accepts(const dl_pm_prog *g, const dl_pm_item *it, unsigned char c) {
    switch (it->op) {
    case DL_PM_BYTE: return c == it->a;
    case DL_PM_ANY: return 1;
    default: return dl_pm_has(g->maps[it->map], c);
    }
}

/* How many bytes from s on (at most `most`) the character item accepts in a row. */
static inline size_t dl_pm_run_length(dl_pm_state *st, const dl_pm_item *it, const char *s, size_t most) {
    size_t k = 0;
    while (k < most) {
        size_t stop = most - k < DL_PM_CHECK_EVERY ? most : k + DL_PM_CHECK_EVERY;
        size_t from = k;
        while (k < stop && dl_pm_accepts(st->g, it, (unsigned char)s[k])) k++;
        dl_pm_work(st, k - from);
        if (k < stop) break;
    }
    return k;
}

static inline const char *dl_pm_walk(dl_pm_state *st, const char *s, size_t i);

/* Matches items i... against the subject from s, as one more nested call: returns where the
 * match ends, or NULL. */
static inline const char *dl_pm_try(dl_pm_state *st, const char *s, size_t i) {
    if (st->depth_left == 0) luaL_error(st->L, "pattern too complex");
    st->depth_left--;
    const char *r = dl_pm_walk(st, s, i);
    st->depth_left++;
    return r;
}

/* The matcher proper: goes through the items from i with s, looping while there is one way
 * on, and calling dl_pm_try for each alternative where there are several. */
static inline const char *dl_pm_walk(dl_pm_state *st, const char *s, size_t i) {
    const dl_pm_prog *g = st->g;
    for (;;) {
        const dl_pm_item *it = &g->items[i];
        dl_pm_work(st, 1);
        switch (it->op) {
        case DL_PM_DONE:
            return s;
        case DL_PM_FAIL:
            luaL_error(st->L, g->fail, g->fail_arg);
            return NULL;
        case DL_PM_AT_END:
            return s == st->end ? s : NULL;
        case DL_PM_OPEN:
        case DL_PM_POSITION: {
            dl_pm_capture *c = &st->cap[it->a];
            c->at = s;
            c->len = it->op == DL_PM_POSITION ? DL_PM_POS_CAP : DL_PM_OPEN_CAP;
            st->ncap = it->a + 1;
            const char *r = dl_pm_try(st, s, i + 1);
            if (r == NULL) st->ncap = it->a; /* the capture was never made */
            return r;
        }
        case DL_PM_CLOSE: {
            dl_pm_capture *c = &st->cap[it->a];
            c->len = s - c->at;
            const char *r = dl_pm_try(st, s, i + 1);
            if (r == NULL) c->len = DL_PM_OPEN_CAP;
            return r;
        }
        case DL_PM_BALANCE: {
            if (s >= st->end || (unsigned char)*s != it->a) return NULL;
            const char *q = s + 1;
            size_t open = 1;
            /* the closer is looked at first: with x == y, the second x closes */
            for (; q < st->end; q++) {
                if ((unsigned char)*q == it->b) {
                    if (--open == 0) break;
                } else if ((unsigned char)*q == it->a) {
                    open++;
                }
            }
            dl_pm_work(st, (size_t)(q - s));
            if (q >= st->end) return NULL;
            s = q + 1;
            i++;
            continue;
        }
        case DL_PM_FRONTIER: {
            /* the subject's start and end count as the byte '\0' */
            unsigned char before = s == st->src ? 0 : (unsigned char)s[-1];
            unsigned char here = s < st->end ? (unsigned char)*s : 0;
            const unsigned char *m = g->maps[it->map];
            if (dl_pm_has(m, before) || !dl_pm_has(m, here)) return NULL;
            i++;
            continue;
        }
        case DL_PM_BACKREF: {
            const dl_pm_capture *c = &st->cap[it->a];
            /* a position capture is no text: nothing equals it */
            if (c->len == DL_PM_POS_CAP || st->end - s < c->len) return NULL;
            dl_pm_work(st, (size_t)c->len);
            if (memcmp(s, c->at, (size_t)c->len) != 0) return NULL;
            s += c->len;
            i++;
            continue;
        }
        default: /* one character class */
            break;
        }
        int here = s < st->end && dl_pm_accepts(g, it, (unsigned char)*s);
        switch (it->rep) {
        case 0:
            if (!here) return NULL;
            s++;
            i++;
            continue;
        case '?':
            if (here) {
                const char *r = dl_pm_try(st, s + 1, i + 1);
                if (r) return r;
            }
            i++;
            continue;
        case '-':
            if (!here) { /* only the empty repetition is left: no choice to remember */
                i++;
                continue;
            }
            for (;;) {
                const char *r = dl_pm_try(st, s, i + 1);
                if (r) return r;
                if (s >= st->end || !dl_pm_accepts(g, it, (unsigned char)*s)) return NULL;
                s++;
            }
        default: { /* '*' and '+': the longest run first, then shorter ones */
            if (!here) {
                if (it->rep == '+') return NULL;
                i++;
                continue;
            }
            size_t most = dl_pm_run_length(st, it, s, (size_t)(st->end - s));
            size_t least = it->rep == '+' ? 1 : 0;
            for (size_t k = most;; k--) {
                const char *r = dl_pm_try(st, s + k, i + 1);
                if (r) return r;
                if (k == least) return NULL;
            }
        }
        }
    }
}

/* Matches the whole program at s, from a fresh state. */
static inline const char *dl_pm_match_at(dl_pm_state *st, const char *s) {
    st->ncap = 0;
    st->depth_left = DL_PM_MAX_DEPTH;
    return dl_pm_try(st, s, 0);
}

/* ---- Captures ---- */
/* Pushes capture k of the match [s, e); with no captures at all, capture 0 is the match. */
static inline void dl_pm_push_capture(dl_pm_state *st, int k, const char *s, const char *e) {
    if (k >= st->ncap) {
        if (k != 0) luaL_error(st->L, "invalid capture index %%%d", k + 1);
        lua_pushlstring(st->L, s, (size_t)(e - s));
        return;
    }
    const dl_pm_capture *c = &st->cap[k];
    if (c->len == DL_PM_OPEN_CAP) luaL_error(st->L, "unfinished capture");
    if (c->len == DL_PM_POS_CAP)
        lua_pushinteger(st->L, (lua_Integer)(c->at - st->src) + 1);
    else
        lua_pushlstring(st->L, c->at, (size_t)c->len);
}

/* Pushes every capture (the whole match when there are none and s is given); returns how many. */
static inline int dl_pm_push_captures(dl_pm_state *st, const char *s, const char *e) {
    int count = st->ncap == 0 && s != NULL ? 1 : st->ncap;
    luaL_checkstack(st->L, count, "too many captures");
    for (int k = 0; k < count; k++) dl_pm_push_capture(st, k, s, e);
    return count;
}

/* ---- Programs in memory ---- */
/* Room for a small program on the C stack; a larger one goes in a userdata. */
typedef struct dl_pm_local {
    _Alignas(16) unsigned char block[DL_PM_LOCAL_MAPS * sizeof(dl_pm_map) + DL_PM_LOCAL_ITEMS * sizeof(dl_pm_item)];
} dl_pm_local;

/* Bytes for the maps and items of a program whose counting run filled `counted`. */
static inline size_t dl_pm_block_size(const dl_pm_prog *counted) {
    return counted->nmaps * sizeof(dl_pm_map) + counted->nitems * sizeof(dl_pm_item);
}

/* Translates the pattern into `block` (maps first, then items: 32-byte maps keep the items
 * aligned), after a counting run sized it. */
static inline void dl_pm_build(dl_pm_prog *g, const char *p, size_t n, void *block) {
    g->maps = (dl_pm_map *)block;
    g->items = (dl_pm_item *)((unsigned char *)block + g->nmaps * sizeof(dl_pm_map));
    dl_pm_compile(p, n, g);
}

/* Translates the pattern into g, in `local` when it fits, else in a userdata it pushes. */
static inline void dl_pm_prepare(lua_State *L, dl_pm_prog *g, const char *p, size_t n, dl_pm_local *local) {
    g->items = NULL;
    g->maps = NULL;
    dl_pm_compile(p, n, g);
    if (g->nitems <= DL_PM_LOCAL_ITEMS && g->nmaps <= DL_PM_LOCAL_MAPS)
        dl_pm_build(g, p, n, local->block);
    else
        dl_pm_build(g, p, n, lua_newuserdatauv(L, dl_pm_block_size(g), 0));
}

static inline void dl_pm_start(dl_pm_state *st, lua_State *L, const dl_pm_prog *g, const char *s, size_t len,
                               const char *what) {
    st->g = g;
    st->src = s;
    st->end = s + len;
    st->L = L;
    st->what = what;
    st->work = 0;
    st->ncap = 0;
}

/* ---- The library functions ---- */
/* A 1-based start position as the manual defines `init`: negative counts from the end, and
 * anything before the start is the start. */
static inline size_t dl_pm_start_position(lua_Integer init, size_t len) {
    if (init > 0) return (size_t)init;
    if (init == 0 || init < -(lua_Integer)len) return 1;
    return len - (size_t)(-init) + 1;
}

/* Whether the pattern has none of the characters that make it more than plain text. */
static inline int dl_pm_is_plain(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0 && strchr("^$*+?.([%-", p[i]) != NULL) return 0;
    return 1;
}

/* string.find (find = 1) and string.match (find = 0). */
static inline int dl_pm_find_or_match(lua_State *L, int find) {
    const char *what = find ? "string.find" : "string.match";
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = dl_pm_start_position(luaL_optinteger(L, 3, 1), ls);
    if (init > ls + 1) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || dl_pm_is_plain(p, lp))) {
        /* glibc's memmem is linear (two-way); an empty needle is found where the search starts */
        const char *at = memmem(s + init - 1, ls - (init - 1), p, lp);
        if (at == NULL) {
            luaL_pushfail(L);
            return 1;
        }
        lua_pushinteger(L, (lua_Integer)(at - s) + 1);
        lua_pushinteger(L, (lua_Integer)(at - s) + (lua_Integer)lp);
        return 2;
    }
    int anchored = lp > 0 && p[0] == '^';
    if (anchored) {
        p++;
        lp--;
    }
    dl_pm_local local;
    dl_pm_prog g;
    dl_pm_prepare(L, &g, p, lp, &local);
    dl_pm_state st;
    dl_pm_start(&st, L, &g, s, ls, what);
    for (const char *from = s + init - 1; from <= st.end; from++) {
        const char *e = dl_pm_match_at(&st, from);
        if (e != NULL) {
            if (!find) return dl_pm_push_captures(&st, from, e);
            lua_pushinteger(L, (lua_Integer)(from - s) + 1);
            lua_pushinteger(L, (lua_Integer)(e - s));
            return dl_pm_push_captures(&st, NULL, NULL) + 2;
        }
        if (anchored) break;
    }
    luaL_pushfail(L);
    return 1;
}

static inline int dl_pm_find(lua_State *L) { return dl_pm_find_or_match(L, 1); }
static inline int dl_pm_match(lua_State *L) { return dl_pm_find_or_match(L, 0); }

/* What a gmatch iterator keeps between calls (a userdata, its program after it). */
typedef struct dl_pm_iter {
    dl_pm_prog g;
    size_t next;       /* offset where the next search starts */
    size_t last_end;   /* offset where the last match ended ... */
    int matched;       /* ... if there was one */
} dl_pm_iter;

/* The iterator (upvalues: the subject, the pattern, the dl_pm_iter). An empty match where the
 * previous match ended is skipped, so "()" and "x*" step through the subject. */
static inline int dl_pm_gmatch_next(lua_State *L) {
    size_t ls;
    const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    dl_pm_iter *it = (dl_pm_iter *)lua_touserdata(L, lua_upvalueindex(3));
    dl_pm_state st;
    dl_pm_start(&st, L, &it->g, s, ls, "string.gmatch");
    for (const char *from = s + it->next; from <= st.end; from++) {
        const char *e = dl_pm_match_at(&st, from);
        if (e != NULL && !(it->matched && (size_t)(e - s) == it->last_end)) {
            it->next = it->last_end = (size_t)(e - s);
            it->matched = 1;
            return dl_pm_push_captures(&st, from, e);
        }
    }
    it->next = ls + 1; /* finished: later calls find nothing either */
    return 0;
}

/* string.gmatch(s, pattern [, init]): `^` is an ordinary character here, as the manual says. */
static inline int dl_pm_gmatch(lua_State *L) {
    size_t ls, lp;
    luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = dl_pm_start_position(luaL_optinteger(L, 3, 1), ls);
    lua_settop(L, 2);
    dl_pm_prog counted;
    counted.items = NULL;
    counted.maps = NULL;
    dl_pm_compile(p, lp, &counted);
    dl_pm_iter *it = (dl_pm_iter *)lua_newuserdatauv(L, sizeof(dl_pm_iter) + dl_pm_block_size(&counted), 0);
    it->g = counted;
    dl_pm_build(&it->g, p, lp, it + 1);
    it->next = init > ls + 1 ? ls + 1 : init - 1; /* past the end: no match at all */
    it->last_end = 0;
    it->matched = 0;
    lua_pushcclosure(L, dl_pm_gmatch_next, 3);
    return 1;
}

/* gsub with a string (or number) replacement: copies it into b with %0-%9 replaced by the
 * match or a capture and %% by %; any other % is an error. */
static inline void dl_pm_add_text(dl_pm_state *st, luaL_Buffer *b, const char *s, const char *e) {
    lua_State *L = st->L;
    size_t len;
    const char *r = lua_tolstring(L, 3, &len);
    const char *end = r + len;
    dl_pm_work(st, len);
    while (r < end) {
        const char *pct = memchr(r, '%', (size_t)(end - r));
        if (pct == NULL) {
            luaL_addlstring(b, r, (size_t)(end - r));
            return;
        }
        luaL_addlstring(b, r, (size_t)(pct - r));
        unsigned char c = pct + 1 < end ? (unsigned char)pct[1] : 0;
        r = pct + 2;
        if (c == '%') {
            luaL_addchar(b, '%');
        } else if (c == '0') {
            luaL_addlstring(b, s, (size_t)(e - s));
        } else if (isdigit(c)) {
            dl_pm_push_capture(st, c - '1', s, e);
            luaL_tolstring(L, -1, NULL); /* a position capture is a number */
            lua_remove(L, -2);
            luaL_addvalue(b);
        } else {
            luaL_error(L, "invalid use of '%c' in replacement string", '%');
        }
    }
}

/* gsub: adds the replacement of the match [s, e) to b. A table is indexed with the first
 * capture, a function called with all captures; false or nil from either keeps the match. */
static inline void dl_pm_add_replacement(dl_pm_state *st, luaL_Buffer *b, const char *s, const char *e, int kind) {
    lua_State *L = st->L;
    if (kind == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = dl_pm_push_captures(st, s, e);
        lua_call(L, n, 1);
    } else if (kind == LUA_TTABLE) {
        dl_pm_push_capture(st, 0, s, e);
        lua_gettable(L, 3);
    } else {
        dl_pm_add_text(st, b, s, e);
        return;
    }
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
    } else if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    } else {
        luaL_addvalue(b);
    }
}

/* string.gsub(s, pattern, repl [, n]) */
static inline int dl_pm_gsub(lua_State *L) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int kind = lua_type(L, 3);
    lua_Integer most = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
    luaL_argexpected(L, kind == LUA_TNUMBER || kind == LUA_TSTRING || kind == LUA_TFUNCTION || kind == LUA_TTABLE, 3,
                     "string/function/table");
    int anchored = lp > 0 && p[0] == '^';
    if (anchored) {
        p++;
        lp--;
    }
    dl_pm_local local;
    dl_pm_prog g;
    dl_pm_prepare(L, &g, p, lp, &local);
    dl_pm_state st;
    dl_pm_start(&st, L, &g, s, ls, "string.gsub");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    const char *at = s, *last_end = NULL;
    lua_Integer count = 0;
    while (count < most) {
        const char *e = dl_pm_match_at(&st, at);
        if (e != NULL && e != last_end) { /* not an empty match where the last one ended */
            count++;
            dl_pm_add_replacement(&st, &b, at, e, kind);
            at = last_end = e;
        } else if (at < st.end) {
            luaL_addchar(&b, *at++);
        } else {
            break;
        }
        if (anchored) break;
    }
    luaL_addlstring(&b, at, (size_t)(st.end - at));
    luaL_pushresult(&b);
    lua_pushinteger(L, count);
    return 2;
}

#endif
