-- The script kit's Lua half: the pure functions that are simplest in Lua (percent-encoding,
-- the query builder, dates of feeds, resolving the links the C scanner found). Run once per
-- Lua state, before the prelude; it returns a function that the prelude calls with the raw
-- primitives and that returns the tables the prelude places under `dl`. Everything here runs
-- as script code: under the handler's time budget and the memory cap.

-- The library functions it uses are taken once, here: what a script later does to the
-- shared `string` or `table` tables does not reach the kit.
local byte, char, format, gsub, lower, match = string.byte, string.char, string.format,
  string.gsub, string.lower, string.match
local concat, sort = table.concat, table.sort
local mathtype, tointeger = math.type, math.tointeger
local error, ipairs, pairs, tonumber, tostring, type = error, ipairs, pairs, tonumber, tostring, type

return function(raw)
  local kit = {}

  -- ---- dl.url.encode / decode / query ----

  local function hex(c) return format("%%%02X", byte(c)) end

  -- Percent-encodes everything but RFC 3986's unreserved characters (letters, digits, - . _ ~).
  local function encode(s)
    if type(s) == "number" then s = tostring(s) end
    if type(s) ~= "string" then error("dl.url.encode wants a string, not a " .. type(s), 2) end
    return (gsub(s, "[^A-Za-z0-9%-%._~]", hex))
  end

  -- Decodes %XX escapes (a '%' not followed by two hex digits stays); '+' stays '+'.
  local function decode(s)
    if type(s) ~= "string" then error("dl.url.decode wants a string, not a " .. type(s), 2) end
    return (gsub(s, "%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
  end

  local function scalar(key, v)
    local t = type(v)
    if t == "string" then return v end
    if t == "number" then return tostring(tointeger(v) or v) end
    if t == "boolean" then return tostring(v) end
    error("dl.url.query: the value of " .. key .. " is a " .. t .. " (strings, numbers, booleans or lists of them)", 3)
  end

  -- { b = "x y", a = 1, c = { 1, 2 } } -> "a=1&b=x%20y&c=1&c=2": keys sorted, lists as repeated keys.
  local function query(t)
    if type(t) ~= "table" then error("dl.url.query wants a table", 2) end
    local keys = {}
    for k in pairs(t) do
      if type(k) ~= "string" and mathtype(k) ~= "integer" then
        error("dl.url.query: keys are strings, not " .. type(k), 2)
      end
      keys[#keys + 1] = tostring(k)
    end
    sort(keys)
    local parts = {}
    for _, key in ipairs(keys) do
      local v = t[key]
      if v == nil then v = t[tointeger(tonumber(key))] end
      if type(v) == "table" then
        for i = 1, #v do parts[#parts + 1] = encode(key) .. "=" .. encode(scalar(key, v[i])) end
      else
        parts[#parts + 1] = encode(key) .. "=" .. encode(scalar(key, v))
      end
    end
    return concat(parts, "&")
  end

  kit.url = { encode = encode, decode = decode, query = query }

  -- ---- dl.time.parse ----

  -- Days from 1970-01-01 to the civil date (proleptic Gregorian; Howard Hinnant's algorithm).
  local function days(y, m, d)
    if m <= 2 then y = y - 1 end
    local era = (y >= 0 and y or y - 399) // 400
    local yoe = y - era * 400
    local mp = (m + 9) % 12
    local doy = (153 * mp + 2) // 5 + d - 1
    local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468
  end

  local function leap(y) return (y % 4 == 0 and y % 100 ~= 0) or y % 400 == 0 end
  local MONTH_DAYS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

  local function epoch(y, mo, d, h, mi, s, offset)
    if mo < 1 or mo > 12 or d < 1 then return nil end
    if d > MONTH_DAYS[mo] + ((mo == 2 and leap(y)) and 1 or 0) then return nil end
    if h > 23 or mi > 59 or s > 60 then return nil end
    return days(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset
  end

  local MONTHS = { jan = 1, feb = 2, mar = 3, apr = 4, may = 5, jun = 6, jul = 7, aug = 8, sep = 9,
    oct = 10, nov = 11, dec = 12 }
  -- RFC 822's zone names; military letters other than Z are ambiguous in practice and refused.
  local ZONES = { ut = 0, utc = 0, gmt = 0, z = 0, est = -5, edt = -4, cst = -6, cdt = -5,
    mst = -7, mdt = -6, pst = -8, pdt = -7 }

  local function zone(z)
    if z == nil or z == "" then return 0 end
    local sign, hh, mm = match(z, "^([+-])(%d%d):?(%d%d)$")
    if sign then
      local minutes = tonumber(hh) * 60 + tonumber(mm)
      return (sign == "-" and -minutes or minutes) * 60
    end
    local hours = ZONES[lower(z)]
    return hours and hours * 3600 or nil
  end

  -- "2024-03-01T12:30:00Z", "2024-03-01 12:30:00.25+01:00", or a date alone ("2024-03-01").
  local function rfc3339(s)
    local y, mo, d, rest = match(s, "^(%d%d%d%d)%-(%d%d)%-(%d%d)(.*)$")
    if not y then return nil end
    y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
    if rest == "" then return epoch(y, mo, d, 0, 0, 0, 0) end
    local h, mi, sec, frac, z = match(rest, "^[Tt ](%d%d):(%d%d):?(%d?%d?)(%.?%d*)(.*)$")
    if not h or (sec == "" and frac ~= "") then return nil end
    local offset = zone(z)
    if offset == nil then return nil end
    local t = epoch(y, mo, d, tonumber(h), tonumber(mi), tonumber(sec) or 0, offset)
    if t and #frac > 1 then t = t + tonumber("0" .. frac) end
    return t
  end

  -- "Tue, 10 Jun 2003 04:00:00 GMT", "10 Jun 03 04:00 +0200" (the weekday and seconds are optional).
  local function rfc822(s)
    s = gsub(s, "^%a+,%s*", "")
    local d, mon, ys, h, mi, sec, z = match(s, "^(%d%d?)%s+(%a%a%a)%a*%s+(%d%d%d?%d?)%s+(%d%d?):(%d%d):?(%d?%d?)%s*(%S*)%s*$")
    if not d then return nil end
    local mo = MONTHS[lower(mon)]
    if not mo then return nil end
    local y = tonumber(ys)
    if #ys == 2 then y = y + (y < 50 and 2000 or 1900) end -- RFC 2822's two-digit years
    if #ys == 3 then y = y + 1900 end
    local offset = zone(z)
    if offset == nil then return nil end
    return epoch(y, mo, tonumber(d), tonumber(h), tonumber(mi), tonumber(sec) or 0, offset)
  end

  local function parse(s)
    if type(s) ~= "string" then error("dl.time.parse wants a string, not a " .. type(s), 2) end
    if #s > 100 then return nil end
    s = match(s, "^%s*(.-)%s*$")
    return rfc3339(s) or rfc822(s)
  end

  kit.time = { parse = parse }

  -- ---- dl.html.links ----

  local function links(body, base)
    if type(body) ~= "string" then error("dl.html.links wants the page's text, not a " .. type(body), 2) end
    if type(base) ~= "string" then error("dl.html.links wants the page's URL as its second argument", 2) end
    if raw.resolve(base, "x") == nil then
      error("dl.html.links: the base " .. format("%q", base) .. " is not an absolute URL", 2)
    end
    local found = raw.native.html_scan(body)
    -- A <base href> changes what every relative URL of the page is relative to.
    for i = 1, #found, 3 do
      if found[i] == "base" and found[i + 1] == "href" then
        base = raw.resolve(base, found[i + 2]) or base
        break
      end
    end
    local out, resolved = {}, {}
    for i = 1, #found, 3 do
      local tag = found[i]
      if tag ~= "base" then
        -- Pages repeat their links: each value is resolved once per call.
        local value = found[i + 2]
        local url = resolved[value]
        if url == nil then
          url = raw.resolve(base, value) or false
          resolved[value] = url
        end
        local scheme = url and match(url, "^(%a[%w+.-]*):")
        scheme = scheme and lower(scheme)
        if scheme == "http" or scheme == "https" then
          out[#out + 1] = { url = url, tag = tag, attr = found[i + 1] }
        end
      end
    end
    return out
  end

  kit.html = { links = links }

  -- ---- dl.http.links ----

  -- RFC 8288's Link header: `<uri>; rel="next last"; title="a, b", <uri2>; rel=prev`.
  -- One pass, every step a find anchored at the position: linear in the value, and
  -- under the handler's budget like all script code. A link-value that does not parse
  -- is left out, from where it goes wrong to the next comma outside a quoted string;
  -- the links around it are kept.
  local find, gmatch, sub = string.find, string.gmatch, string.sub
  local TOKEN = "^[!#$%%&'*+%-.^_`|~%w]+"

  -- The position after the spaces and tabs at `pos`.
  local function skip(s, pos)
    local _, last = find(s, "^[ \t]*", pos)
    return last + 1
  end

  -- The quoted string whose `"` is at `pos`: its text without escapes and the position
  -- after it; nil when it does not end.
  local function quoted(s, pos)
    local parts, at = {}, pos + 1
    while true do
      local stop = find(s, '["\\]', at)
      if stop == nil or stop == #s and byte(s, stop) == 92 then return nil end
      parts[#parts + 1] = sub(s, at, stop - 1)
      if byte(s, stop) == 34 then return concat(parts), stop + 1 end
      parts[#parts + 1] = sub(s, stop + 1, stop + 1)
      at = stop + 2
    end
  end

  -- The position of the next comma outside a quoted string; #s + 1 when none.
  local function next_comma(s, pos)
    while true do
      local stop = find(s, '[,"]', pos)
      if stop == nil then return #s + 1 end
      if byte(s, stop) == 44 then return stop end
      local _, after = quoted(s, stop)
      if after == nil then return #s + 1 end
      pos = after
    end
  end

  -- A parameter's value at `pos` (after its "="): the text and the position after it.
  -- An unquoted value is RFC 8288's token, widened to anything up to a space, ";" or ","
  -- (servers send `type=text/html`, whose "/" no token has).
  local function param_value(s, pos)
    if byte(s, pos) == 34 then return quoted(s, pos) end
    local _, last = find(s, '^[^ \t;,"]+', pos)
    if last == nil then return nil end
    return sub(s, pos, last), last + 1
  end

  -- The link-value whose `<` is at `pos`: its target and parameters (names in lower
  -- case, the first of each kept, RFC 8288 3.3), and the position of the comma or the
  -- end after it; nil and the position where it went wrong when it does not parse.
  local function link_value(s, pos)
    local close = find(s, ">", pos + 1, true)
    -- A URI has no "<": one before the ">" starts the next link-value (this
    -- one never closed), which is kept.
    local reopened = find(s, "<", pos + 1, true)
    if reopened and (close == nil or reopened < close) then return nil, nil, reopened end
    if close == nil then return nil, pos end
    local target, params = sub(s, pos + 1, close - 1), {}
    pos = skip(s, close + 1)
    while byte(s, pos) == 59 do -- ";"
      pos = skip(s, pos + 1)
      local _, last = find(s, TOKEN, pos)
      if last then
        local name, value = lower(sub(s, pos, last)), ""
        pos = skip(s, last + 1)
        if byte(s, pos) == 61 then -- "="
          value, pos = param_value(s, skip(s, pos + 1))
          if value == nil then return nil, close end
          pos = skip(s, pos)
        end
        if params[name] == nil then params[name] = value end
      end
    end
    local c = byte(s, pos)
    if c ~= nil and c ~= 44 then return nil, pos end
    return target, params, pos
  end

  -- An RFC 8187 ext-value's text: charset'language'percent-encoded. UTF-8
  -- (and US-ASCII) values are decoded; another charset's is left as given.
  local function ext_value(v)
    local charset, encoded = match(v, "^([%w!#$%%&+%-%^_`{}~]+)'[%w%-]*'(.*)$")
    if charset == nil then return v end
    charset = lower(charset)
    if charset ~= "utf-8" and charset ~= "us-ascii" then return v end
    return (gsub(encoded, "%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
  end

  local function http_links(value, base)
    if type(base) ~= "string" or raw.resolve(base, "x") == nil then
      error("dl.http.links wants the absolute URL the header came with as its second argument", 2)
    end
    if value == nil then return {} end
    if type(value) ~= "string" then
      error("dl.http.links wants a Link header's value (a string, or nil), not a " .. type(value), 2)
    end
    local out, pos, resolved = {}, 1, {}
    while true do
      pos = find(value, "[^ \t,]", pos)
      if pos == nil then break end
      local target, params, after
      if byte(value, pos) == 60 then target, params, after = link_value(value, pos) end
      if target == nil and after then
        pos = after
      elseif target == nil then
        -- Not a link-value: on to the next comma outside a quoted string.
        pos = next_comma(value, (params or pos) + 1)
      else
        pos = after
        -- Headers repeat their targets (first, prev): each is resolved once per call.
        local url = resolved[target]
        if url == nil then
          url = raw.resolve(base, target) or false
          resolved[target] = url
        end
        if url then
          local link = { url = url }
          for name, v in pairs(params) do
            if name ~= "url" and name ~= "rels" then link[name] = v end
          end
          -- Relation types are case-insensitive and a value may hold several
          -- ("next last"): `rel` is the value, `rels` a set of each (l.rels.next).
          local rels, list = {}, {}
          for r in gmatch(lower(link.rel or ""), "%S+") do
            if not rels[r] then rels[r], list[#list + 1] = true, r end
          end
          if link.rel then link.rel = concat(list, " ") end
          link.rels = rels
          -- The resolver drops fragments, which is what an anchor often is.
          if link.anchor then
            local fragment = match(link.anchor, "#.*$") or ""
            local resolved_anchor = raw.resolve(base, link.anchor)
            link.anchor = resolved_anchor and resolved_anchor .. fragment or link.anchor
          end
          -- RFC 8187's extended values (title*=UTF-8'de'n%c3%a4chstes): the
          -- text, percent-decoded; title* is the title where both are given.
          for name, v in pairs(link) do
            if type(v) == "string" and sub(name, -1) == "*" then link[name] = ext_value(v) end
          end
          if link["title*"] then link.title = link["title*"] end
          out[#out + 1] = link
        end
      end
    end
    return out
  end

  kit.http = { links = http_links }
  return kit
end
