// The scanner behind dl.html.links: one linear pass over an HTML page that finds the href,
// src and srcset attributes of its tags (the URLs of a srcset one by one), with the
// character references that URLs carry decoded (&amp;, &quot;, &#38;, &#x26; ...). Comments
// and the text of <script> and <style> are skipped, as a browser does. The prelude resolves
// each value against the page's URL (or its <base href>) with the resolver of dl.url.resolve.
// Returns a flat list: tag, attribute, value, tag, attribute, value, ...
#ifndef DL_KIT_HTML_H
#define DL_KIT_HTML_H

typedef struct dl_html {
    lua_State *L;
    const char *p, *end;
    int out;              /* the result list's stack index */
    lua_Integer count;
    unsigned steps;
} dl_html;

static inline int dl_html_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
static inline char dl_html_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

/* Case-insensitive: does the text at p (len bytes available) start with the lower-case word? */
static inline int dl_html_starts(const char *p, size_t avail, const char *word) {
    size_t n = strlen(word);
    if (avail < n) return 0;
    for (size_t i = 0; i < n; i++)
        if (dl_html_lower(p[i]) != word[i]) return 0;
    return 1;
}

/* Finds `word` (lower case) case-insensitively from p; returns end when absent. */
static inline const char *dl_html_find(dl_html *h, const char *p, const char *word) {
    size_t n = strlen(word);
    for (; p + n <= h->end; p++) {
        if (dl_html_lower(*p) == word[0] && dl_html_starts(p, (size_t)(h->end - p), word)) return p;
    }
    return h->end;
}

static inline void dl_html_emit(dl_html *h, const char *tag, size_t taglen, const char *attr, const char *v, size_t vlen) {
    lua_State *L = h->L;
    char lowtag[32];
    size_t n = taglen < sizeof lowtag ? taglen : sizeof lowtag - 1;
    for (size_t i = 0; i < n; i++) lowtag[i] = dl_html_lower(tag[i]);
    lua_pushlstring(L, lowtag, n);
    lua_rawseti(L, h->out, ++h->count);
    lua_pushstring(L, attr);
    lua_rawseti(L, h->out, ++h->count);
    /* Character references, decoded into a buffer only when there is an '&'. */
    if (memchr(v, '&', vlen) == NULL) {
        /* surrounding spaces are not part of a URL (HTML strips them) */
        while (vlen > 0 && dl_html_space(*v)) { v++; vlen--; }
        while (vlen > 0 && dl_html_space(v[vlen - 1])) vlen--;
        lua_pushlstring(L, v, vlen);
    } else {
        dl_kit_buf *b = dl_kit_buf_new(L);
        size_t i = 0;
        while (i < vlen && dl_html_space(v[i])) i++;
        while (vlen > i && dl_html_space(v[vlen - 1])) vlen--;
        while (i < vlen) {
            if (v[i] != '&') { dl_kit_buf_addchar(L, b, v[i++]); continue; }
            static const struct { const char *name; char ch; } named[] = {
                {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}, {"amp", '&'}};
            int done = 0;
            for (size_t k = 0; k < sizeof named / sizeof named[0] && !done; k++) {
                size_t len = strlen(named[k].name);
                if (vlen - i - 1 >= len && memcmp(v + i + 1, named[k].name, len) == 0) {
                    dl_kit_buf_addchar(L, b, named[k].ch);
                    i += 1 + len;
                    done = 1;
                }
            }
            if (done) continue;
            if (i + 2 < vlen && v[i + 1] == '#') {
                size_t j = i + 2;
                int hex = j < vlen && (v[j] == 'x' || v[j] == 'X');
                if (hex) j++;
                unsigned long cp = 0;
                size_t digits = 0;
                while (j < vlen && digits < 8) {
                    char c = v[j];
                    int d = (c >= '0' && c <= '9') ? c - '0'
                        : (hex && c >= 'a' && c <= 'f') ? c - 'a' + 10
                        : (hex && c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
                    if (d < 0) break;
                    cp = cp * (hex ? 16 : 10) + (unsigned long)d;
                    j++;
                    digits++;
                }
                if (digits > 0) {
                    if (j < vlen && v[j] == ';') j++;
                    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
                    dl_kit_buf_addutf8(L, b, cp);
                    i = j;
                    continue;
                }
            }
            dl_kit_buf_addchar(L, b, v[i++]); /* not a reference we know: kept as it is */
        }
        lua_pushlstring(L, b->p ? b->p : "", b->n);
        lua_closeslot(L, -2);
        lua_remove(L, -2);
    }
    lua_rawseti(L, h->out, ++h->count);
}

/* The URLs of a srcset: "a.jpg 1x, b.jpg 2x" (a URL, then descriptors up to a comma). */
static inline void dl_html_srcset(dl_html *h, const char *tag, size_t taglen, const char *v, size_t vlen) {
    size_t i = 0;
    while (i < vlen) {
        while (i < vlen && (dl_html_space(v[i]) || v[i] == ',')) i++;
        size_t start = i;
        while (i < vlen && !dl_html_space(v[i])) i++;
        size_t stop = i;
        while (stop > start && v[stop - 1] == ',') stop--; /* "a.jpg," has no descriptor */
        if (stop > start) dl_html_emit(h, tag, taglen, "srcset", v + start, stop - start);
        if (stop < i) continue; /* the comma ended the candidate */
        int depth = 0;
        while (i < vlen && (v[i] != ',' || depth > 0)) {
            if (v[i] == '(') depth++;
            else if (v[i] == ')' && depth > 0) depth--;
            i++;
        }
    }
}

/* One tag from just after its '<' and name; stops after its '>'. */
static inline void dl_html_attributes(dl_html *h, const char *tag, size_t taglen) {
    while (h->p < h->end) {
        while (h->p < h->end && (dl_html_space(*h->p) || *h->p == '/')) h->p++;
        if (h->p >= h->end) return;
        if (*h->p == '>') { h->p++; return; }
        const char *name = h->p;
        while (h->p < h->end && !dl_html_space(*h->p) && *h->p != '=' && *h->p != '>' && !(*h->p == '/' && h->p != name)) h->p++;
        if (h->p == name) h->p++; /* a stray '=' */
        size_t namelen = (size_t)(h->p - name);
        while (h->p < h->end && dl_html_space(*h->p)) h->p++;
        if (h->p >= h->end || *h->p != '=') continue; /* no value */
        h->p++;
        while (h->p < h->end && dl_html_space(*h->p)) h->p++;
        const char *v = h->p;
        size_t vlen;
        if (h->p < h->end && (*h->p == '"' || *h->p == '\'')) {
            char q = *h->p++;
            v = h->p;
            const char *close = memchr(h->p, q, (size_t)(h->end - h->p));
            if (close == NULL) close = h->end;
            vlen = (size_t)(close - v);
            h->p = close < h->end ? close + 1 : close;
        } else {
            while (h->p < h->end && !dl_html_space(*h->p) && *h->p != '>') h->p++;
            vlen = (size_t)(h->p - v);
        }
        if (namelen == 4 && dl_html_starts(name, 4, "href")) dl_html_emit(h, tag, taglen, "href", v, vlen);
        else if (namelen == 3 && dl_html_starts(name, 3, "src")) dl_html_emit(h, tag, taglen, "src", v, vlen);
        else if (namelen == 6 && dl_html_starts(name, 6, "srcset")) dl_html_srcset(h, tag, taglen, v, vlen);
    }
}

/* __dl.html_scan(body) */
static inline int dl_kit_html_scan(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    lua_createtable(L, 0, 0);
    dl_html h = {L, s, s + len, 2, 0, 0};
    while (h.p < h.end) {
        if (++h.steps % 4096u == 0) dl_check_deadline(L, "dl.html.links");
        const char *lt = memchr(h.p, '<', (size_t)(h.end - h.p));
        if (lt == NULL) break;
        h.p = lt + 1;
        size_t avail = (size_t)(h.end - h.p);
        if (dl_html_starts(h.p, avail, "!--")) { /* a comment */
            const char *stop = dl_html_find(&h, h.p + 3, "-->");
            h.p = stop < h.end ? stop + 3 : h.end;
            continue;
        }
        if (avail == 0 || !((*h.p >= 'a' && *h.p <= 'z') || (*h.p >= 'A' && *h.p <= 'Z'))) {
            /* </x>, <!DOCTYPE>, <?xml ?>, or a lone '<': nothing to find inside */
            const char *gt = memchr(h.p, '>', avail);
            if (avail > 0 && (*h.p == '/' || *h.p == '!' || *h.p == '?')) h.p = gt ? gt + 1 : h.end;
            continue;
        }
        const char *tag = h.p;
        while (h.p < h.end && !dl_html_space(*h.p) && *h.p != '>' && *h.p != '/') h.p++;
        size_t taglen = (size_t)(h.p - tag);
        dl_html_attributes(&h, tag, taglen);
        /* The text of script and style is not HTML: skip it to its end tag. */
        const char *raw = NULL;
        if (taglen == 6 && dl_html_starts(tag, 6, "script")) raw = "</script";
        else if (taglen == 5 && dl_html_starts(tag, 5, "style")) raw = "</style";
        if (raw) h.p = dl_html_find(&h, h.p, raw);
    }
    return 1;
}

#endif
