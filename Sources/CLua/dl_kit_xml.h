// dl.xml.parse: XML (RSS, Atom, sitemaps) to a tree of tables with libexpat, Debian's
// well-kept streaming parser. Each element is { name = "media:content" (as written),
// localname = "content", ns = "http://search.yahoo.com/mrss/" (the URI its prefix, or the
// default namespace, is bound to; nil when none), attrs = { ["xml:lang"] = "en", ... },
// children = { elements... }, text = its own character data, trimmed }. Namespaces are
// resolved here, not by expat's namespace mode, so a feed with an undeclared prefix still
// parses (its ns is nil).
//
// Bounds: expat allocates through this file's functions, which count against the Lua state's
// memory cap; entity declarations are refused (no "billion laughs"); the input is fed in
// pieces of 256 KiB with the time budget checked between them (expat's work is linear in its
// input once entities cannot expand); elements nest at most DL_XML_MAX_DEPTH deep. Expat's
// callbacks build the tree in protected calls, so no Lua error ever unwinds through expat.
#ifndef DL_KIT_XML_H
#define DL_KIT_XML_H
#include <expat.h>

#define DL_XML_MAX_DEPTH 1000
#define DL_XML_PIECE ((size_t)1 << 18)

/* ---- expat's memory, counted in the state's control block ---- */
/* Expat's allocator functions take no context: the state being parsed for is this thread's
 * (the Lua thread), and each block records its control block and size in front of it. (A
 * function's static, not a file's: Swift's importer emits the functions a header defines,
 * not its file-scope variables.) */
static inline dl_lua_ctl **dl_xml_ctl_slot(void) {
    static __thread dl_lua_ctl *slot;
    return &slot;
}

typedef struct dl_xml_block { dl_lua_ctl *ctl; size_t size; size_t pad; } dl_xml_block;

static void *dl_xml_malloc(size_t n) {
    dl_lua_ctl *c = *dl_xml_ctl_slot();
    if (c && c->enforce && (n > c->limit || c->in_use + n > c->limit)) return NULL;
    dl_xml_block *b = (dl_xml_block *)malloc(sizeof(dl_xml_block) + n);
    if (b == NULL) return NULL;
    b->ctl = c;
    b->size = n;
    if (c) c->in_use += n;
    return b + 1;
}

static void dl_xml_free(void *p) {
    if (p == NULL) return;
    dl_xml_block *b = (dl_xml_block *)p - 1;
    if (b->ctl) b->ctl->in_use -= b->size;
    free(b);
}

static void *dl_xml_realloc(void *p, size_t n) {
    if (p == NULL) return dl_xml_malloc(n);
    dl_xml_block *old = (dl_xml_block *)p - 1;
    dl_lua_ctl *c = old->ctl;
    size_t was = old->size;
    if (c && c->enforce && n > was && (n - was > c->limit || c->in_use + (n - was) > c->limit)) return NULL;
    dl_xml_block *b = (dl_xml_block *)realloc(old, sizeof(dl_xml_block) + n);
    if (b == NULL) return NULL;
    if (c) c->in_use = c->in_use - was + n;
    b->size = n;
    return b + 1;
}

static const XML_Memory_Handling_Suite dl_xml_memory = {dl_xml_malloc, dl_xml_realloc, dl_xml_free};

/* ---- the parse ---- */
typedef struct dl_xml {
    lua_State *L;
    XML_Parser parser;
    int failed;          /* a callback's protected call failed: its error is on the stack */
    int refused;         /* an entity declaration was refused */
    int skipped;         /* an entity reference no declaration covers (an external DTD's) */
    char skipped_name[64];
    int depth;
    /* what the protected callbacks read */
    const XML_Char *name;
    const XML_Char **atts;
    const XML_Char *text;
    int textlen;
} dl_xml;

static inline int dl_xml_close(lua_State *L) {
    dl_xml *x = (dl_xml *)luaL_checkudata(L, 1, "dl.kit.xml");
    if (x->parser) {
        XML_ParserFree(x->parser); /* each block knows its own control block */
        x->parser = NULL;
    }
    return 0;
}

/* Stack of the parse (absolute indices in the C function's frame, passed to callbacks as
 * upvalue-free arguments): the open elements and the text pieces of each. */
#define DL_XML_OPEN 3   /* list: element tables, innermost last */
#define DL_XML_TEXT 4   /* list: a list of text pieces per open element (or false) */
#define DL_XML_ROOT 5   /* { root } once the first element starts */

/* The namespace URI bound to `prefix` (len bytes; 0 for the default namespace) in the open
 * elements, innermost first; pushes it or nil. The new element's attrs are on top of `open`. */
static inline void dl_xml_push_ns(lua_State *L, int open, int depth, const char *prefix, size_t len) {
    char key[256];
    if (len > sizeof key - 8) { lua_pushnil(L); return; }
    memcpy(key, "xmlns", 5);
    size_t k = 5;
    if (len > 0) { key[k++] = ':'; memcpy(key + k, prefix, len); k += len; }
    if (len == 3 && memcmp(prefix, "xml", 3) == 0) { lua_pushliteral(L, "http://www.w3.org/XML/1998/namespace"); return; }
    for (int level = depth; level >= 1; level--) {
        lua_rawgeti(L, open, level);
        lua_getfield(L, -1, "attrs");
        lua_pushlstring(L, key, k);
        lua_rawget(L, -2);
        if (!lua_isnil(L, -1)) {
            lua_replace(L, -3);
            lua_pop(L, 1);
            return;
        }
        lua_pop(L, 3);
    }
    lua_pushnil(L);
}

static inline int dl_xml_do_start(lua_State *L) {
    dl_xml *x = (dl_xml *)lua_touserdata(L, 1);
    int open = 2, texts = 3, root = 4;
    if (x->depth >= DL_XML_MAX_DEPTH) return luaL_error(L, "elements nested deeper than %d", DL_XML_MAX_DEPTH);
    lua_createtable(L, 0, 6);
    int el = lua_gettop(L);
    lua_pushstring(L, x->name);
    lua_setfield(L, el, "name");
    lua_createtable(L, 0, 0);
    for (const XML_Char **a = x->atts; a[0] != NULL; a += 2) {
        lua_pushstring(L, a[1]);
        lua_setfield(L, -2, a[0]);
    }
    lua_setfield(L, el, "attrs");
    lua_createtable(L, 0, 0);
    lua_setfield(L, el, "children");
    lua_pushliteral(L, "");
    lua_setfield(L, el, "text");
    const char *colon = strchr(x->name, ':');
    lua_pushstring(L, colon ? colon + 1 : x->name);
    lua_setfield(L, el, "localname");
    /* the namespace: looked up with the element itself already open */
    x->depth++;
    lua_pushvalue(L, el);
    lua_rawseti(L, open, x->depth);
    lua_pushboolean(L, 0);
    lua_rawseti(L, texts, x->depth);
    dl_xml_push_ns(L, open, x->depth, x->name, colon ? (size_t)(colon - x->name) : 0);
    lua_setfield(L, el, "ns");
    if (x->depth == 1) {
        lua_pushvalue(L, el);
        lua_rawseti(L, root, 1);
    } else {
        lua_rawgeti(L, open, x->depth - 1);
        lua_getfield(L, -1, "children");
        lua_pushvalue(L, el);
        lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    }
    return 0;
}

static inline int dl_xml_do_end(lua_State *L) {
    dl_xml *x = (dl_xml *)lua_touserdata(L, 1);
    int open = 2, texts = 3;
    if (lua_rawgeti(L, texts, x->depth) == LUA_TTABLE) {
        /* the element's text: its pieces joined, XML white space trimmed at both ends */
        int pieces = lua_gettop(L);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        lua_Integer n = (lua_Integer)lua_rawlen(L, pieces);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, pieces, i);
            luaL_addvalue(&b);
        }
        luaL_pushresult(&b);
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        size_t a = 0;
        while (a < len && (s[a] == ' ' || s[a] == '\t' || s[a] == '\n' || s[a] == '\r')) a++;
        while (len > a && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\n' || s[len - 1] == '\r')) len--;
        lua_pushlstring(L, s + a, len - a);
        lua_rawgeti(L, open, x->depth);
        lua_insert(L, -2);
        lua_setfield(L, -2, "text");
    }
    lua_pushnil(L);
    lua_rawseti(L, open, x->depth);
    lua_pushnil(L);
    lua_rawseti(L, texts, x->depth);
    x->depth--;
    return 0;
}

static inline int dl_xml_do_text(lua_State *L) {
    dl_xml *x = (dl_xml *)lua_touserdata(L, 1);
    int texts = 3;
    if (x->depth == 0) return 0;
    if (lua_rawgeti(L, texts, x->depth) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 4, 0);
        lua_pushvalue(L, -1);
        lua_rawseti(L, texts, x->depth);
    }
    lua_pushlstring(L, x->text, (size_t)x->textlen);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    return 0;
}

/* Runs `f` protected with (x, open, texts, root); on failure keeps its error and stops expat. */
static inline void dl_xml_protected(dl_xml *x, lua_CFunction f) {
    lua_State *L = x->L;
    if (x->failed) return;
    if (!lua_checkstack(L, 8)) {
        x->failed = 1;
        lua_pushliteral(L, "Lua stack exhausted");
        XML_StopParser(x->parser, XML_FALSE);
        return;
    }
    lua_pushcfunction(L, f);
    lua_pushlightuserdata(L, x);
    lua_pushvalue(L, DL_XML_OPEN);
    lua_pushvalue(L, DL_XML_TEXT);
    lua_pushvalue(L, DL_XML_ROOT);
    int status = lua_pcall(L, 4, 0, 0);
    if (status != LUA_OK) {
        x->failed = status; /* the error object stays on the stack */
        XML_StopParser(x->parser, XML_FALSE);
    }
}

static void XMLCALL dl_xml_start(void *ud, const XML_Char *name, const XML_Char **atts) {
    dl_xml *x = (dl_xml *)ud;
    x->name = name;
    x->atts = atts;
    dl_xml_protected(x, dl_xml_do_start);
}

static void XMLCALL dl_xml_end(void *ud, const XML_Char *name) {
    (void)name;
    dl_xml_protected((dl_xml *)ud, dl_xml_do_end);
}

static void XMLCALL dl_xml_chars(void *ud, const XML_Char *s, int len) {
    dl_xml *x = (dl_xml *)ud;
    x->text = s;
    x->textlen = len;
    dl_xml_protected(x, dl_xml_do_text);
}

static void XMLCALL dl_xml_entity_decl(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
                                       int value_length, const XML_Char *base, const XML_Char *system_id,
                                       const XML_Char *public_id, const XML_Char *notation) {
    (void)name; (void)is_param; (void)value; (void)value_length; (void)base; (void)system_id;
    (void)public_id; (void)notation;
    dl_xml *x = (dl_xml *)ud;
    x->refused = 1;
    XML_StopParser(x->parser, XML_FALSE);
}

/* A document with an external DTD (which is never read) may name entities it does not
 * declare: expat cannot tell them from the DTD's and reports them here instead of failing.
 * Its text would silently lose them: the parse is an error instead. */
static void XMLCALL dl_xml_skipped_entity(void *ud, const XML_Char *name, int is_parameter_entity) {
    dl_xml *x = (dl_xml *)ud;
    x->skipped = is_parameter_entity ? 2 : 1;
    snprintf(x->skipped_name, sizeof x->skipped_name, "%s", name);
    XML_StopParser(x->parser, XML_FALSE);
}

/* dl.xml.parse(text) */
static inline int dl_kit_xml_parse(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    dl_xml *x = (dl_xml *)lua_newuserdatauv(L, sizeof(dl_xml), 0); /* 2 */
    memset(x, 0, sizeof *x);
    x->L = L;
    dl_kit_closing(L, "dl.kit.xml", dl_xml_close);
    lua_createtable(L, 16, 0); /* 3: open elements */
    lua_createtable(L, 16, 0); /* 4: their text pieces */
    lua_createtable(L, 1, 0);  /* 5: the root */
    *dl_xml_ctl_slot() = dl_ctl(L);
    x->parser = XML_ParserCreate_MM(NULL, &dl_xml_memory, NULL);
    if (x->parser == NULL) return luaL_error(L, "dl.xml.parse: no memory for the parser (memory cap)");
    XML_SetUserData(x->parser, x);
    XML_SetElementHandler(x->parser, dl_xml_start, dl_xml_end);
    XML_SetCharacterDataHandler(x->parser, dl_xml_chars);
    XML_SetEntityDeclHandler(x->parser, dl_xml_entity_decl);
    XML_SetSkippedEntityHandler(x->parser, dl_xml_skipped_entity);
    size_t done = 0;
    for (;;) {
        size_t piece = len - done < DL_XML_PIECE ? len - done : DL_XML_PIECE;
        int last = done + piece == len;
        *dl_xml_ctl_slot() = dl_ctl(L);
        enum XML_Status status = XML_Parse(x->parser, s + done, (int)piece, last);
        done += piece;
        if (x->failed) {
            /* a callback's error (memory, nesting): raised again from here */
            if (x->failed == LUA_ERRMEM) return lua_error(L);
            const char *why = lua_tostring(L, -1);
            return luaL_error(L, "dl.xml.parse: %s", why ? why : "error");
        }
        if (x->refused) return luaL_error(L, "dl.xml.parse: the document declares entities, which are refused (line %d)",
                                         (int)XML_GetCurrentLineNumber(x->parser));
        if (x->skipped) {
            return luaL_error(L, "dl.xml.parse: the document uses the entity %s%s; which it does not declare (an external "
                              "DTD is never read) at line %d", x->skipped == 2 ? "%" : "&", x->skipped_name,
                              (int)XML_GetCurrentLineNumber(x->parser));
        }
        if (status != XML_STATUS_OK && XML_GetErrorCode(x->parser) == XML_ERROR_NO_MEMORY) {
            return luaL_error(L, "dl.xml.parse: the document needs more memory than the memory cap leaves (line %d)",
                              (int)XML_GetCurrentLineNumber(x->parser));
        }
        if (status != XML_STATUS_OK) {
            return luaL_error(L, "dl.xml.parse: %s at line %d, column %d", XML_ErrorString(XML_GetErrorCode(x->parser)),
                              (int)XML_GetCurrentLineNumber(x->parser), (int)XML_GetCurrentColumnNumber(x->parser) + 1);
        }
        if (last) break;
        dl_check_deadline(L, "dl.xml.parse");
    }
    lua_rawgeti(L, 5, 1);
    if (lua_isnil(L, -1)) return luaL_error(L, "dl.xml.parse: no element in the document");
    return 1;
}

#endif
