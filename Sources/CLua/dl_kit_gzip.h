// dl.gunzip: gzip data (RFC 1952; several members one after another, as `cat a.gz b.gz`
// makes) inflated with zlib. The output is bounded by what the memory cap leaves: a first
// pass only counts the inflated bytes (into a small scratch buffer) and gives up as soon as
// they would not fit twice into the room left (the buffer and the Lua string made from it),
// so a gzip bomb fails with a clear error after a bounded amount of work instead of eating
// memory. The second pass inflates into a buffer of exactly that size. Both passes check the
// time budget every megabyte.
#ifndef DL_KIT_GZIP_H
#define DL_KIT_GZIP_H
#include <zlib.h>

typedef struct dl_gz {
    z_stream zs;
    int live;
} dl_gz;

static inline int dl_gz_end(lua_State *L) {
    dl_gz *g = (dl_gz *)luaL_checkudata(L, 1, "dl.kit.gz");
    if (g->live) inflateEnd(&g->zs);
    g->live = 0;
    return 0;
}

/* Pushes a to-be-closed z_stream set up for gzip. */
static inline dl_gz *dl_gz_new(lua_State *L) {
    dl_gz *g = (dl_gz *)lua_newuserdatauv(L, sizeof(dl_gz), 0);
    memset(g, 0, sizeof *g);
    dl_kit_closing(L, "dl.kit.gz", dl_gz_end);
    if (inflateInit2(&g->zs, 16 + MAX_WBITS) != Z_OK) luaL_error(L, "dl.gunzip: zlib cannot start");
    g->live = 1;
    return g;
}

static inline int dl_gz_is_member(const unsigned char *p, size_t left) {
    return left >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* One pass over all members. With out == NULL only counts, and fails past `limit` bytes. */
static inline size_t dl_gz_pass(lua_State *L, const unsigned char *in, size_t len, unsigned char *out, size_t size,
                                size_t limit) {
    dl_gz *g = dl_gz_new(L);
    unsigned char scratch[1 << 16];
    size_t total = 0, since_check = 0;
    g->zs.next_in = (Bytef *)in;
    g->zs.avail_in = 0;
    size_t fed = 0;
    for (;;) {
        /* avail_in is 32 bits: the input goes in pieces of at most 1 GiB */
        if (g->zs.avail_in == 0 && fed < len) {
            size_t piece = len - fed < ((size_t)1 << 30) ? len - fed : ((size_t)1 << 30);
            g->zs.next_in = (Bytef *)(in + fed);
            g->zs.avail_in = (uInt)piece;
            fed += piece;
        }
        /* Into the output while it has room; past it (the data changed?) into the scratch,
         * so that the overflow is seen below rather than stalling zlib. */
        int into_out = out != NULL && total < size;
        unsigned char *dest = into_out ? out + total : scratch;
        size_t room = into_out ? size - total : sizeof scratch;
        if (room > sizeof scratch) room = sizeof scratch;
        g->zs.next_out = dest;
        g->zs.avail_out = (uInt)room;
        int rc = inflate(&g->zs, Z_NO_FLUSH);
        size_t got = room - g->zs.avail_out;
        total += got;
        since_check += got;
        if (since_check >= ((size_t)1 << 20)) {
            since_check = 0;
            dl_check_deadline(L, "dl.gunzip");
        }
        if (out == NULL && total > limit) {
            luaL_error(L, "dl.gunzip: the data inflates to more than %d MiB, more than the memory cap leaves room for (a gzip bomb?)",
                       (int)(limit >> 20));
        }
        if (out != NULL && total > size) luaL_error(L, "dl.gunzip: the data changed between passes");
        size_t pos = (size_t)(g->zs.next_in - (Bytef *)in), left = len - pos;
        if (rc == Z_STREAM_END) {
            if (left == 0) break;
            if (dl_gz_is_member(in + pos, left)) { /* another member follows */
                if (inflateReset(&g->zs) != Z_OK) luaL_error(L, "dl.gunzip: zlib cannot start");
                continue;
            }
            /* Zero bytes after the last member (padding) are ignored, as gzip does. */
            size_t i = pos;
            while (i < len && in[i] == 0) i++;
            if (i == len) break;
            luaL_error(L, "dl.gunzip: %d bytes after the gzip data are not gzip data", (int)left);
        }
        if (rc == Z_DATA_ERROR) luaL_error(L, "dl.gunzip: corrupt gzip data (%s)", g->zs.msg ? g->zs.msg : "bad data");
        if (rc == Z_MEM_ERROR) luaL_error(L, "dl.gunzip: zlib is out of memory");
        if (rc != Z_OK && rc != Z_BUF_ERROR) luaL_error(L, "dl.gunzip: zlib error %d", rc);
        if (got == 0 && left == 0) luaL_error(L, "dl.gunzip: the gzip data is cut short");
    }
    lua_closeslot(L, -1);
    lua_pop(L, 1);
    return total;
}

/* dl.gunzip(data) */
static inline int dl_kit_gunzip(lua_State *L) {
    size_t len;
    const unsigned char *in = (const unsigned char *)luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    if (!dl_gz_is_member(in, len)) return luaL_error(L, "dl.gunzip: not gzip data (it does not start with 1f 8b)");
    size_t limit = dl_kit_room(L) / 2;
    size_t total = dl_gz_pass(L, in, len, NULL, 0, limit);
    dl_kit_buf *b = dl_kit_buf_new(L);
    dl_kit_buf_reserve(L, b, total ? total : 1);
    dl_gz_pass(L, in, len, (unsigned char *)b->p, total, total);
    b->n = total;
    lua_pushlstring(L, b->p, b->n);
    return 1;
}

#endif
