// Lua 5.4.4's pattern matcher (lstrlib.c), with a deadline. Lua's own matcher runs inside
// one C call where the count hook never fires: a backtracking pattern (`a*b` over 100,000
// `a`s, `.-.-.-...b`) or a plain find of a long needle could keep a handler, and the whole run,
// busy for hours. This copy counts its steps (each call of `match`, each character a greedy
// item scans) and reads the clock every DL_SM_CHECK_EVERY of them, raising the time budget's
// error at the caller's line. The plain search uses glibc's memmem (linear) instead of
// lstrlib's quadratic memchr + memcmp loop. Everything else is Lua's code, renamed dl_sm_*
// (every C symbol of ours starts with dl_), so patterns mean exactly what they mean in Lua.
//
// Copyright (C) 1994-2022 Lua.org, PUC-Rio. Permission is hereby granted, free of charge, to
// any person obtaining a copy of this software and associated documentation files (the
// "Software"), to deal in the Software without restriction, including without limitation the
// rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
// the Software, and to permit persons to whom the Software is furnished to do so, subject to
// the following conditions: The above copyright notice and this permission notice shall be
// included in all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED
// "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE
// WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO
// EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
// CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
#ifndef DL_LUA_MATCH_H
#define DL_LUA_MATCH_H

/* glibc declares memmem only under _GNU_SOURCE, which the module's string.h was not built with. */
extern void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);

#ifndef l_unlikely
#define l_unlikely(x) (__builtin_expect(((x) != 0), 0))
#endif
#ifndef LUA_MAXCAPTURES
#define LUA_MAXCAPTURES 32
#endif
#define dl_sm_uchar(c) ((unsigned char)(c))
/* Steps between two reads of the clock (a read costs ~20 ns; 16k steps take ~50 us). */
#define DL_SM_CHECK_EVERY 16384u

static inline size_t dl_sm_posrelat (lua_Integer pos, size_t len) {
  if (pos > 0) return (size_t)pos;
  else if (pos == 0) return 1;
  else if (pos < -(lua_Integer)len) return 1;
  else return len + (size_t)pos + 1;
}

struct dl_MatchState;
static inline void dl_sm_tick (struct dl_MatchState *ms, size_t extra);

#define DL_SM_CAP_UNFINISHED	(-1)
#define DL_SM_CAP_POSITION	(-2)


typedef struct dl_MatchState {
  const char *src_init;  /* init of source string */
  const char *src_end;  /* end ('\0') of source string */
  const char *p_end;  /* end ('\0') of pattern */
  lua_State *L;
  int matchdepth;  /* control for recursive depth (to avoid C stack overflow) */
  unsigned char level;  /* total number of captures (finished or unfinished) */
  unsigned steps;  /* dlpipe: work done since the deadline was last checked */
  const char *what;  /* dlpipe: the library function, for the timeout message */
  struct {
    const char *init;
    ptrdiff_t len;
  } capture[LUA_MAXCAPTURES];
} dl_MatchState;


/* recursive function */
static inline const char *dl_sm_match (dl_MatchState *ms, const char *s, const char *p);


/* maximum recursion depth for 'dl_sm_match' */
#if !defined(DL_SM_MAXCCALLS)
#define DL_SM_MAXCCALLS	200
#endif


#define DL_SM_L_ESC		'%'
#define DL_SM_SPECIALS	"^$*+?.([%-"


static inline int dl_sm_check_capture (dl_MatchState *ms, int l) {
  l -= '1';
  if (l_unlikely(l < 0 || l >= ms->level ||
                 ms->capture[l].len == DL_SM_CAP_UNFINISHED))
    return luaL_error(ms->L, "invalid capture index %%%d", l + 1);
  return l;
}


static inline int dl_sm_capture_to_close (dl_MatchState *ms) {
  int level = ms->level;
  for (level--; level>=0; level--)
    if (ms->capture[level].len == DL_SM_CAP_UNFINISHED) return level;
  return luaL_error(ms->L, "invalid pattern capture");
}


static inline const char *dl_sm_classend (dl_MatchState *ms, const char *p) {
  switch (*p++) {
    case DL_SM_L_ESC: {
      if (l_unlikely(p == ms->p_end))
        luaL_error(ms->L, "malformed pattern (ends with '%%')");
      return p+1;
    }
    case '[': {
      if (*p == '^') p++;
      do {  /* look for a ']' */
        if (l_unlikely(p == ms->p_end))
          luaL_error(ms->L, "malformed pattern (missing ']')");
        if (*(p++) == DL_SM_L_ESC && p < ms->p_end)
          p++;  /* skip escapes (e.g. '%]') */
      } while (*p != ']');
      return p+1;
    }
    default: {
      return p;
    }
  }
}


static inline int dl_sm_match_class (int c, int cl) {
  int res;
  switch (tolower(cl)) {
    case 'a' : res = isalpha(c); break;
    case 'c' : res = iscntrl(c); break;
    case 'd' : res = isdigit(c); break;
    case 'g' : res = isgraph(c); break;
    case 'l' : res = islower(c); break;
    case 'p' : res = ispunct(c); break;
    case 's' : res = isspace(c); break;
    case 'u' : res = isupper(c); break;
    case 'w' : res = isalnum(c); break;
    case 'x' : res = isxdigit(c); break;
    case 'z' : res = (c == 0); break;  /* deprecated option */
    default: return (cl == c);
  }
  return (islower(cl) ? res : !res);
}


static inline int dl_sm_matchbracketclass (int c, const char *p, const char *ec) {
  int sig = 1;
  if (*(p+1) == '^') {
    sig = 0;
    p++;  /* skip the '^' */
  }
  while (++p < ec) {
    if (*p == DL_SM_L_ESC) {
      p++;
      if (dl_sm_match_class(c, dl_sm_uchar(*p)))
        return sig;
    }
    else if ((*(p+1) == '-') && (p+2 < ec)) {
      p+=2;
      if (dl_sm_uchar(*(p-2)) <= c && c <= dl_sm_uchar(*p))
        return sig;
    }
    else if (dl_sm_uchar(*p) == c) return sig;
  }
  return !sig;
}


static inline int dl_sm_singlematch (dl_MatchState *ms, const char *s, const char *p,
                        const char *ep) {
  if (s >= ms->src_end)
    return 0;
  else {
    int c = dl_sm_uchar(*s);
    switch (*p) {
      case '.': return 1;  /* matches any char */
      case DL_SM_L_ESC: return dl_sm_match_class(c, dl_sm_uchar(*(p+1)));
      case '[': return dl_sm_matchbracketclass(c, p, ep-1);
      default:  return (dl_sm_uchar(*p) == c);
    }
  }
}


static inline const char *dl_sm_matchbalance (dl_MatchState *ms, const char *s,
                                   const char *p) {
  if (l_unlikely(p >= ms->p_end - 1))
    luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
  if (*s != *p) return NULL;
  else {
    int b = *p;
    int e = *(p+1);
    int cont = 1;
    while (++s < ms->src_end) {
      if (*s == e) {
        if (--cont == 0) return s+1;
      }
      else if (*s == b) cont++;
    }
  }
  return NULL;  /* string ends out of balance */
}


static inline const char *dl_sm_max_expand (dl_MatchState *ms, const char *s,
                                 const char *p, const char *ep) {
  ptrdiff_t i = 0;  /* counts maximum expand for item */
  while (dl_sm_singlematch(ms, s + i, p, ep))
    i++;
  dl_sm_tick(ms, (size_t)i);  /* dlpipe: the scan counts as work too */
  /* keeps trying to dl_sm_match with the maximum repetitions */
  while (i>=0) {
    const char *res = dl_sm_match(ms, (s+i), ep+1);
    if (res) return res;
    i--;  /* else didn't dl_sm_match; reduce 1 repetition to try again */
  }
  return NULL;
}


static inline const char *dl_sm_min_expand (dl_MatchState *ms, const char *s,
                                 const char *p, const char *ep) {
  for (;;) {
    const char *res = dl_sm_match(ms, s, ep+1);
    if (res != NULL)
      return res;
    else if (dl_sm_singlematch(ms, s, p, ep))
      s++;  /* try with one more repetition */
    else return NULL;
  }
}


static inline const char *dl_sm_start_capture (dl_MatchState *ms, const char *s,
                                    const char *p, int what) {
  const char *res;
  int level = ms->level;
  if (level >= LUA_MAXCAPTURES) luaL_error(ms->L, "too many captures");
  ms->capture[level].init = s;
  ms->capture[level].len = what;
  ms->level = level+1;
  if ((res=dl_sm_match(ms, s, p)) == NULL)  /* dl_sm_match failed? */
    ms->level--;  /* undo capture */
  return res;
}


static inline const char *dl_sm_end_capture (dl_MatchState *ms, const char *s,
                                  const char *p) {
  int l = dl_sm_capture_to_close(ms);
  const char *res;
  ms->capture[l].len = s - ms->capture[l].init;  /* close capture */
  if ((res = dl_sm_match(ms, s, p)) == NULL)  /* dl_sm_match failed? */
    ms->capture[l].len = DL_SM_CAP_UNFINISHED;  /* undo capture */
  return res;
}


static inline const char *dl_sm_match_capture (dl_MatchState *ms, const char *s, int l) {
  size_t len;
  l = dl_sm_check_capture(ms, l);
  len = ms->capture[l].len;
  if ((size_t)(ms->src_end-s) >= len &&
      memcmp(ms->capture[l].init, s, len) == 0)
    return s+len;
  else return NULL;
}


static inline const char *dl_sm_match (dl_MatchState *ms, const char *s, const char *p) {
  if (++ms->steps >= DL_SM_CHECK_EVERY) dl_sm_tick(ms, 0);  /* dlpipe: the deadline */
  if (l_unlikely(ms->matchdepth-- == 0))
    luaL_error(ms->L, "pattern too complex");
  init: /* using goto's to optimize tail recursion */
  if (p != ms->p_end) {  /* end of pattern? */
    switch (*p) {
      case '(': {  /* start capture */
        if (*(p + 1) == ')')  /* position capture? */
          s = dl_sm_start_capture(ms, s, p + 2, DL_SM_CAP_POSITION);
        else
          s = dl_sm_start_capture(ms, s, p + 1, DL_SM_CAP_UNFINISHED);
        break;
      }
      case ')': {  /* end capture */
        s = dl_sm_end_capture(ms, s, p + 1);
        break;
      }
      case '$': {
        if ((p + 1) != ms->p_end)  /* is the '$' the last char in pattern? */
          goto dflt;  /* no; go to default */
        s = (s == ms->src_end) ? s : NULL;  /* check end of string */
        break;
      }
      case DL_SM_L_ESC: {  /* escaped sequences not in the format class[*+?-]? */
        switch (*(p + 1)) {
          case 'b': {  /* balanced string? */
            s = dl_sm_matchbalance(ms, s, p + 2);
            if (s != NULL) {
              p += 4; goto init;  /* return dl_sm_match(ms, s, p + 4); */
            }  /* else fail (s == NULL) */
            break;
          }
          case 'f': {  /* frontier? */
            const char *ep; char previous;
            p += 2;
            if (l_unlikely(*p != '['))
              luaL_error(ms->L, "missing '[' after '%%f' in pattern");
            ep = dl_sm_classend(ms, p);  /* points to what is next */
            previous = (s == ms->src_init) ? '\0' : *(s - 1);
            if (!dl_sm_matchbracketclass(dl_sm_uchar(previous), p, ep - 1) &&
               dl_sm_matchbracketclass(dl_sm_uchar(*s), p, ep - 1)) {
              p = ep; goto init;  /* return dl_sm_match(ms, s, ep); */
            }
            s = NULL;  /* dl_sm_match failed */
            break;
          }
          case '0': case '1': case '2': case '3':
          case '4': case '5': case '6': case '7':
          case '8': case '9': {  /* capture results (%0-%9)? */
            s = dl_sm_match_capture(ms, s, dl_sm_uchar(*(p + 1)));
            if (s != NULL) {
              p += 2; goto init;  /* return dl_sm_match(ms, s, p + 2) */
            }
            break;
          }
          default: goto dflt;
        }
        break;
      }
      default: dflt: {  /* pattern class plus optional suffix */
        const char *ep = dl_sm_classend(ms, p);  /* points to optional suffix */
        /* does not dl_sm_match at least once? */
        if (!dl_sm_singlematch(ms, s, p, ep)) {
          if (*ep == '*' || *ep == '?' || *ep == '-') {  /* accept empty? */
            p = ep + 1; goto init;  /* return dl_sm_match(ms, s, ep + 1); */
          }
          else  /* '+' or no suffix */
            s = NULL;  /* fail */
        }
        else {  /* matched once */
          switch (*ep) {  /* handle optional suffix */
            case '?': {  /* optional */
              const char *res;
              if ((res = dl_sm_match(ms, s + 1, ep + 1)) != NULL)
                s = res;
              else {
                p = ep + 1; goto init;  /* else return dl_sm_match(ms, s, ep + 1); */
              }
              break;
            }
            case '+':  /* 1 or more repetitions */
              s++;  /* 1 dl_sm_match already done */
              /* FALLTHROUGH */
            case '*':  /* 0 or more repetitions */
              s = dl_sm_max_expand(ms, s, p, ep);
              break;
            case '-':  /* 0 or more repetitions (minimum) */
              s = dl_sm_min_expand(ms, s, p, ep);
              break;
            default:  /* no suffix */
              s++; p = ep; goto init;  /* return dl_sm_match(ms, s + 1, ep); */
          }
        }
        break;
      }
    }
  }
  ms->matchdepth++;
  return s;
}



/* dlpipe: glibc's memmem (two-way: linear) instead of lstrlib's memchr + memcmp loop, which
** is quadratic: a 1 MB needle in 2 MB ran for hours. */
static inline const char *dl_sm_lmemfind (const char *s1, size_t l1,
                               const char *s2, size_t l2) {
  if (l2 == 0) return s1;  /* empty strings are everywhere */
  return (const char *)memmem(s1, l1, s2, l2);
}


/*
** get information about the i-th capture. If there are no captures
** and 'i==0', return information about the whole dl_sm_match, which
** is the range 's'..'e'. If the capture is a string, return
** its length and put its address in '*cap'. If it is an integer
** (a position), push it on the stack and return DL_SM_CAP_POSITION.
*/
static inline size_t dl_sm_get_onecapture (dl_MatchState *ms, int i, const char *s,
                              const char *e, const char **cap) {
  if (i >= ms->level) {
    if (l_unlikely(i != 0))
      luaL_error(ms->L, "invalid capture index %%%d", i + 1);
    *cap = s;
    return e - s;
  }
  else {
    ptrdiff_t capl = ms->capture[i].len;
    *cap = ms->capture[i].init;
    if (l_unlikely(capl == DL_SM_CAP_UNFINISHED))
      luaL_error(ms->L, "unfinished capture");
    else if (capl == DL_SM_CAP_POSITION)
      lua_pushinteger(ms->L, (ms->capture[i].init - ms->src_init) + 1);
    return capl;
  }
}


/*
** Push the i-th capture on the stack.
*/
static inline void dl_sm_push_onecapture (dl_MatchState *ms, int i, const char *s,
                                                    const char *e) {
  const char *cap;
  ptrdiff_t l = dl_sm_get_onecapture(ms, i, s, e, &cap);
  if (l != DL_SM_CAP_POSITION)
    lua_pushlstring(ms->L, cap, l);
  /* else position was already pushed */
}


static inline int dl_sm_push_captures (dl_MatchState *ms, const char *s, const char *e) {
  int i;
  int nlevels = (ms->level == 0 && s) ? 1 : ms->level;
  luaL_checkstack(ms->L, nlevels, "too many captures");
  for (i = 0; i < nlevels; i++)
    dl_sm_push_onecapture(ms, i, s, e);
  return nlevels;  /* number of strings pushed */
}


/* check whether pattern has no special characters */
static inline int dl_sm_nospecials (const char *p, size_t l) {
  size_t upto = 0;
  do {
    if (strpbrk(p + upto, DL_SM_SPECIALS))
      return 0;  /* pattern has a special character */
    upto += strlen(p + upto) + 1;  /* may have more after \0 */
  } while (upto <= l);
  return 1;  /* no special chars found */
}


static inline void dl_sm_prepstate (dl_MatchState *ms, lua_State *L,
                       const char *s, size_t ls, const char *p, size_t lp) {
  ms->L = L;
  ms->matchdepth = DL_SM_MAXCCALLS;
  ms->src_init = s;
  ms->src_end = s + ls;
  ms->p_end = p + lp;
  ms->steps = 0;
}


static inline void dl_sm_reprepstate (dl_MatchState *ms) {
  ms->level = 0;
}


static inline int dl_sm_str_find_aux (lua_State *L, int find) {
  const char *what = find ? "string.find" : "string.match";
  size_t ls, lp;
  const char *s = luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  size_t init = dl_sm_posrelat(luaL_optinteger(L, 3, 1), ls) - 1;
  if (init > ls) {  /* start after string's end? */
    luaL_pushfail(L);  /* cannot find anything */
    return 1;
  }
  /* explicit request or no special characters? */
  if (find && (lua_toboolean(L, 4) || dl_sm_nospecials(p, lp))) {
    /* do a plain search */
    const char *s2 = dl_sm_lmemfind(s + init, ls - init, p, lp);
    if (s2) {
      lua_pushinteger(L, (s2 - s) + 1);
      lua_pushinteger(L, (s2 - s) + lp);
      return 2;
    }
  }
  else {
    dl_MatchState ms;
    const char *s1 = s + init;
    int anchor = (*p == '^');
    if (anchor) {
      p++; lp--;  /* skip anchor character */
    }
    dl_sm_prepstate(&ms, L, s, ls, p, lp);
    ms.what = what;
    do {
      const char *res;
      dl_sm_reprepstate(&ms);
      if ((res=dl_sm_match(&ms, s1, p)) != NULL) {
        if (find) {
          lua_pushinteger(L, (s1 - s) + 1);  /* start */
          lua_pushinteger(L, res - s);   /* end */
          return dl_sm_push_captures(&ms, NULL, 0) + 2;
        }
        else
          return dl_sm_push_captures(&ms, s1, res);
      }
    } while (s1++ < ms.src_end && !anchor);
  }
  luaL_pushfail(L);  /* not found */
  return 1;
}


static inline int dl_sm_str_find (lua_State *L) {
  return dl_sm_str_find_aux(L, 1);
}


static inline int dl_sm_str_match (lua_State *L) {
  return dl_sm_str_find_aux(L, 0);
}


/* state for 'dl_sm_gmatch' */
typedef struct dl_GMatchState {
  const char *src;  /* current position */
  const char *p;  /* pattern */
  const char *lastmatch;  /* end of last dl_sm_match */
  dl_MatchState ms;  /* dl_sm_match state */
} dl_GMatchState;


static inline int dl_sm_gmatch_aux (lua_State *L) {
  dl_GMatchState *gm = (dl_GMatchState *)lua_touserdata(L, lua_upvalueindex(3));
  const char *src;
  gm->ms.L = L;
  for (src = gm->src; src <= gm->ms.src_end; src++) {
    const char *e;
    dl_sm_reprepstate(&gm->ms);
    if ((e = dl_sm_match(&gm->ms, src, gm->p)) != NULL && e != gm->lastmatch) {
      gm->src = gm->lastmatch = e;
      return dl_sm_push_captures(&gm->ms, src, e);
    }
  }
  return 0;  /* not found */
}


static inline int dl_sm_gmatch (lua_State *L) {
  size_t ls, lp;
  const char *s = luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  size_t init = dl_sm_posrelat(luaL_optinteger(L, 3, 1), ls) - 1;
  dl_GMatchState *gm;
  lua_settop(L, 2);  /* keep strings on closure to avoid being collected */
  gm = (dl_GMatchState *)lua_newuserdatauv(L, sizeof(dl_GMatchState), 0);
  if (init > ls)  /* start after string's end? */
    init = ls + 1;  /* avoid overflows in 's + init' */
  dl_sm_prepstate(&gm->ms, L, s, ls, p, lp);
  gm->ms.what = "string.gmatch";
  gm->src = s + init; gm->p = p; gm->lastmatch = NULL;
  lua_pushcclosure(L, dl_sm_gmatch_aux, 3);
  return 1;
}


static inline void dl_sm_add_s (dl_MatchState *ms, luaL_Buffer *b, const char *s,
                                                   const char *e) {
  size_t l;
  lua_State *L = ms->L;
  const char *news = lua_tolstring(L, 3, &l);
  const char *p;
  while ((p = (char *)memchr(news, DL_SM_L_ESC, l)) != NULL) {
    luaL_addlstring(b, news, p - news);
    p++;  /* skip ESC */
    if (*p == DL_SM_L_ESC)  /* '%%' */
      luaL_addchar(b, *p);
    else if (*p == '0')  /* '%0' */
        luaL_addlstring(b, s, e - s);
    else if (isdigit(dl_sm_uchar(*p))) {  /* '%n' */
      const char *cap;
      ptrdiff_t resl = dl_sm_get_onecapture(ms, *p - '1', s, e, &cap);
      if (resl == DL_SM_CAP_POSITION)
        luaL_addvalue(b);  /* add position to accumulated result */
      else
        luaL_addlstring(b, cap, resl);
    }
    else
      luaL_error(L, "invalid use of '%c' in replacement string", DL_SM_L_ESC);
    l -= p + 1 - news;
    news = p + 1;
  }
  luaL_addlstring(b, news, l);
}


/*
** Add the replacement value to the string buffer 'b'.
** Return true if the original string was changed. (Function calls and
** table indexing resulting in nil or false do not change the subject.)
*/
static inline int dl_sm_add_value (dl_MatchState *ms, luaL_Buffer *b, const char *s,
                                      const char *e, int tr) {
  lua_State *L = ms->L;
  switch (tr) {
    case LUA_TFUNCTION: {  /* call the function */
      int n;
      lua_pushvalue(L, 3);  /* push the function */
      n = dl_sm_push_captures(ms, s, e);  /* all captures as arguments */
      lua_call(L, n, 1);  /* call it */
      break;
    }
    case LUA_TTABLE: {  /* index the table */
      dl_sm_push_onecapture(ms, 0, s, e);  /* first capture is the index */
      lua_gettable(L, 3);
      break;
    }
    default: {  /* LUA_TNUMBER or LUA_TSTRING */
      dl_sm_add_s(ms, b, s, e);  /* add value to the buffer */
      return 1;  /* something changed */
    }
  }
  if (!lua_toboolean(L, -1)) {  /* nil or false? */
    lua_pop(L, 1);  /* remove value */
    luaL_addlstring(b, s, e - s);  /* keep original text */
    return 0;  /* no changes */
  }
  else if (l_unlikely(!lua_isstring(L, -1)))
    return luaL_error(L, "invalid replacement value (a %s)",
                         luaL_typename(L, -1));
  else {
    luaL_addvalue(b);  /* add result to accumulator */
    return 1;  /* something changed */
  }
}


static inline int dl_sm_str_gsub (lua_State *L) {
  size_t srcl, lp;
  const char *src = luaL_checklstring(L, 1, &srcl);  /* subject */
  const char *p = luaL_checklstring(L, 2, &lp);  /* pattern */
  const char *lastmatch = NULL;  /* end of last dl_sm_match */
  int tr = lua_type(L, 3);  /* replacement type */
  lua_Integer max_s = luaL_optinteger(L, 4, srcl + 1);  /* max replacements */
  int anchor = (*p == '^');
  lua_Integer n = 0;  /* replacement count */
  int changed = 0;  /* change flag */
  dl_MatchState ms;
  luaL_Buffer b;
  luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING ||
                   tr == LUA_TFUNCTION || tr == LUA_TTABLE, 3,
                      "string/function/table");
  luaL_buffinit(L, &b);
  if (anchor) {
    p++; lp--;  /* skip anchor character */
  }
  dl_sm_prepstate(&ms, L, src, srcl, p, lp);
  ms.what = "string.gsub";
  while (n < max_s) {
    const char *e;
    dl_sm_reprepstate(&ms);  /* (re)prepare state for new dl_sm_match */
    if ((e = dl_sm_match(&ms, src, p)) != NULL && e != lastmatch) {  /* dl_sm_match? */
      n++;
      changed = dl_sm_add_value(&ms, &b, src, e, tr) | changed;
      src = lastmatch = e;
    }
    else if (src < ms.src_end)  /* otherwise, skip one character */
      luaL_addchar(&b, *src++);
    else break;  /* end of subject */
    if (anchor) break;
  }
  if (!changed)  /* no changes? */
    lua_pushvalue(L, 1);  /* return original string */
  else {  /* something changed */
    luaL_addlstring(&b, src, ms.src_end-src);
    luaL_pushresult(&b);  /* create and return new string */
  }
  lua_pushinteger(L, n);  /* number of substitutions */
  return 2;
}


/* Adds `extra` steps (a scan) to the count and, every DL_SM_CHECK_EVERY steps, checks the
** deadline of the running call (dl_check_deadline raises at the Lua caller's line). */
static inline void dl_sm_tick (dl_MatchState *ms, size_t extra) {
  size_t total = (size_t)ms->steps + extra;
  if (total < DL_SM_CHECK_EVERY) { ms->steps = (unsigned)total; return; }
  ms->steps = 0;
  dl_check_deadline(ms->L, ms->what);
}

#endif
