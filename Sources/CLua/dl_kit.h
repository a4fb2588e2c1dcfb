// The script kit's C functions (dl.json, dl.xml, dl.html.links' scanner, dl.gunzip): Lua C
// functions called straight from scripts, so that they run under the memory cap (every
// allocation goes through the state's allocator, or is counted against it) and can raise the
// time budget's error as they go. Each is linear in its input (or output) and checks the
// deadline while it works: the count hook cannot interrupt a C call.
#ifndef DL_KIT_H
#define DL_KIT_H
#include "dl_lua.h"
#include "dl_kit_buffer.h"
#include "dl_kit_json.h"
#include "dl_kit_gzip.h"
#include "dl_kit_html.h"
#include "dl_kit_xml.h"

/* Pushes a table of the kit's C functions, for the prelude to place under `dl`. */
static inline void dl_kit_push(lua_State *L) {
    static const luaL_Reg kit[] = {{"json_decode", dl_kit_json_decode}, {"json_encode", dl_kit_json_encode},
        {"gunzip", dl_kit_gunzip}, {"html_scan", dl_kit_html_scan}, {"xml_parse", dl_kit_xml_parse}, {NULL, NULL}};
    luaL_newlib(L, kit);
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "json_null");
}

#endif
