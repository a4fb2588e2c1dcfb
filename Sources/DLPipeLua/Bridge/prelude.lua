-- The friendly `dl` API, written in Lua over a few raw primitives that Swift
-- registers (`__dl.*`). Keeping the API in Lua keeps the Swift side small: Swift
-- only queues downloads, controls them and reads files; this prelude checks where
-- each call is allowed (from api.lua's table, `__dl.api`), keeps handlers in
-- order, and shapes event arguments. Compiled into the binary (Package.swift:
-- embedInCode) and run once per Lua state, before any script.

local raw = __dl
__dl = nil

-- The functions the prelude needs, taken at start-up. Scripts never see these tables:
-- each script gets copies of its own (dl_push_new_env), so a hook that replaces
-- table.insert or tostring changes its own world, not the job's handlers.
local type, tostring, pairs, ipairs, pcall, error, select, setmetatable, rawset =
  type, tostring, pairs, ipairs, pcall, error, select, setmetatable, rawset
local table_insert, table_concat = table.insert, table.concat
local string_format = string.format
local string_upper = string.upper
local math_tointeger, math_type, math_min, math_max = math.tointeger, math.type, math.min, math.max
local API = raw.api

-- Where each call may be called, and the events, from the API table.
local WHERE = {}
for _, call in ipairs(API.calls) do WHERE[call.name] = call.where end
local EVENTS = {}
for event in pairs(API.events) do EVENTS[event] = true end
-- The Lua type a dl.config key takes, from its type in api.lua: "integer?" and
-- "number?" a number, "string[]?" a table, a choice of quoted words a string,
-- and "any" for a choice of types ("integer|string?": Swift's checkconfig reads it).
local function lua_type(api_type)
  local found = nil
  for part in (api_type:gsub("%?$", "")):gmatch("[^|]+") do
    local kind = part
    if part == "integer" or part == "number" then kind = "number"
    elseif part:sub(1, 1) == '"' then kind = "string"
    elseif part:sub(-2) == "[]" or part:sub(1, 5) == "table" then kind = "table" end
    if found ~= nil and found ~= kind then return "any" end
    found = kind
  end
  return found
end
-- dl.config's keys and the Lua type of each, and dl.add's fields, all from api.lua.
local CONFIG_KEYS = {}
for key, def in pairs(API.defs.fields.config) do CONFIG_KEYS[key] = lua_type(def[1]) end

-- Environment variables are secrets until the user names them: os.getenv answers
-- nil for any other. `--allow-env NAME` allows a name for every script; the job's
-- dl.config{ env = { ... } } for the job only (its os.getenv is `host.job_getenv`,
-- which Swift puts in the job's environment; hooks keep the shared one).
local real_getenv = os.getenv
local allowed_everywhere = {}
local allowed_job = {}
for name in pairs(raw.allow_env or {}) do
  allowed_everywhere[name] = true
  allowed_job[name] = true
end
local function getenv_over(allowed)
  return function(name)
    if type(name) ~= "string" then error("bad argument #1 to 'getenv' (string expected)", 2) end
    if allowed[name] then return real_getenv(name) end
    return nil
  end
end
os.getenv = getenv_over(allowed_everywhere)
local ADD_KEYS = {}
for key in pairs(API.defs.fields.add) do ADD_KEYS[key] = true end
-- Methods a download may use (HEAD has no body to download).
local ADD_METHODS = { GET = true, POST = true, PUT = true, PATCH = true, DELETE = true }
-- The names as messages list them (config keys sorted, dl.add's fields in api.lua's order).
local ADD_ORDER = API.defs.order.add
local CONFIG_ORDER = {}
for key in pairs(CONFIG_KEYS) do CONFIG_ORDER[#CONFIG_ORDER + 1] = key end
table.sort(CONFIG_ORDER)

local handlers = {}
for event in pairs(EVENTS) do handlers[event] = {} end
local config = {}
local metas = {}          -- id -> meta table (meta stays on the Lua side)
local metas_known = {}    -- id -> true once metas[id] is this state's (added or assigned here)
local depths = {}         -- id -> d.depth, for depths above 0 (a chained add's)
local newest_id = 0       -- the highest id dl.add has returned (the engine numbers new downloads upwards)
local warned_limit = {}   -- the limits dl.add has warned about (once each)
-- Where we are: "job" or "hook" at top level while loading, else the event name.
local context = "job"
local current = nil       -- the fields of the download a handler runs for
local current_proxy = nil -- what its handlers get as `d`
local current_changed = false -- a handler assigned d.name or d.dir
local current_arg = nil
local SKIP, RETRY, HANDLED = {}, {}, {}
-- The verdict a call of dl.skip, dl.retry or dl.handled made in the running
-- handler: the call takes effect whether or not the handler returns it.
local recorded, recorded_extra = nil, nil

local PRELUDE = "dlpipe/prelude.lua:"
local positions = {}      -- handler -> "file:line: " where dl.on registered it
local hook_handlers = {}  -- handler -> true when a drop-in hook registered it
local hook_done_warned = {} -- hook done handlers already warned about a return
local running = nil       -- the handler running now
local loading = nil       -- the script whose top level runs now

-- "file:line: " of the innermost script frame, learnt from error()'s
-- position prefix (the debug library is not in the sandbox). Prelude and C
-- frames are skipped; a frame lost to a tail call falls back to the line
-- that registered the running handler.
local function script_position()
  for level = 2, 16 do
    local _, where = pcall(error, "", level)
    if where ~= "" and where:sub(1, #PRELUDE) ~= PRELUDE then return where end
  end
  if running then return positions[running], true end
  return loading and (loading .. ": ") or "", true
end

-- A call's error at the script's line. In `return dl.x(...)` Lua drops the
-- calling frame (a tail call), so the error names the call and the line of
-- the handler (or the script) instead, and says why.
local function fail(message)
  local where, lost = script_position()
  if lost then
    message = message .. " (at a tail call, `return " .. (message:match("^(dl[%w_.]*)") or "dl.*")
      .. "(...)`, for which Lua keeps no line" .. (running and "; the line is the handler's dl.on)" or ")")
  end
  error(where .. message, 0)
end

-- `unknown <what> 'word'`, the nearest known name when it looks like a typo
-- (an edit distance of at most 2, or a third of the word), and the known names.
-- The edit distance is lint.lua's, which the static pass's suggestions use too.
local distance = raw.lint.distance
local function unknown(what, word, names)
  local message = "unknown " .. what .. " '" .. tostring(word) .. "'"
  if type(word) == "string" and #word <= 64 then
    local best, best_distance = nil, math_max(2, #word // 3) + 1
    for _, name in ipairs(names) do
      local d = distance(word:lower(), name)
      if d < best_distance then best, best_distance = name, d end
    end
    if best then message = message .. " (did you mean '" .. best .. "'?)" end
  end
  return message .. "; known: " .. table_concat(names, ", ")
end

local function allowed(name)
  local where = WHERE[name]
  for _, place in ipairs(where) do
    if place == context or (place == "top" and (context == "job" or context == "hook")) then
      return
    end
  end
  local here = (context == "job" or context == "hook") and "the top level of a script"
    or ("a " .. context .. " handler")
  fail(name .. " may not be called in " .. here .. " (allowed: " .. table_concat(where, ", ") .. ")")
end

-- A primitive refuses arguments whose copies in Swift would not fit in what the memory
-- cap leaves (LuaRuntime.register's cost): raised at the prelude's line that called it,
-- so these wrappers raise it again at the script's.
local table_pack, table_unpack = table.pack, table.unpack
local function at_script_line(f)
  return function(...)
    local results = table_pack(pcall(f, ...))
    if not results[1] then fail((tostring(results[2]):gsub("^dlpipe/prelude%.lua:%d+: ", ""))) end
    return table_unpack(results, 2, results.n)
  end
end
for _, name in ipairs({ "safename", "log", "warn", "sha256_string", "sha256", "write", "append", "remove", "read", "list", "checkpath" }) do
  raw[name] = at_script_line(raw[name])
end

local dl = {}

-- Numbers cross into Swift only inside their range (api.lua's `range`, next to
-- each key): a NaN, an infinity, a fraction where a count is wanted or a value
-- past the range is refused here, at the script's line. (1e300 once reached a
-- Swift conversion to Int, which trapped and killed the process.)
local CONFIG_DEFS, ADD_DEFS = API.defs.fields.config, API.defs.fields.add
local function number_text(n)
  return math_type(n) == "integer" and string_format("%d", n) or string_format("%.14g", n)
end
-- What a range wants, for messages: "a whole number from 1 to 1000",
-- "a number of seconds above 0, at most 86400".
local function range_text(range, integer)
  local low, high = number_text(range[1]), range[2] and number_text(range[2])
  if integer then
    return "a whole number" .. (range.unit and (" of " .. range.unit) or "") .. " from " .. low
      .. (high and (" to " .. high) or "")
  end
  if range.above then return "a number of seconds above " .. low .. (high and (", at most " .. high) or "") end
  return "a number of seconds from " .. low .. (high and (" to " .. high) or "")
end
-- `v` as the number Swift may take (an integer when `integer`), or nil.
local function in_range(v, range, integer)
  if type(v) ~= "number" or v ~= v then return nil end
  if integer then
    v = math_tointeger(v)
    if v == nil then return nil end
  end
  if range.above then
    if not (v > range[1]) then return nil end
  elseif v < range[1] then
    return nil
  end
  if range[2] ~= nil and v > range[2] then return nil end
  if v == 1 / 0 then return nil end
  return v
end
-- A refused value in a message (NaN as "nan": C prints 0/0 as "-nan").
local function shown(v)
  local t = type(v)
  if v ~= v then return "nan" end
  if t == "number" or t == "string" or t == "boolean" or t == "nil" then return tostring(v) end
  return "a " .. t
end
-- The checked number of `key` (a dl.config key or dl.add field, `defs` its
-- table), or an error at the script's line that names the key and its range.
local function checked_number(what, defs, key, v)
  local def = defs[key]
  local integer = def[1]:sub(1, 7) == "integer"
  local n = in_range(v, def.range, integer)
  if n == nil then fail(what .. key .. " wants " .. range_text(def.range, integer) .. ", not " .. shown(v)) end
  return n
end

-- Every mistake in dl.config is a load error at the line of the call
-- (script_position, which also survives `return dl.config{...}`): values
-- are checked here, by the same Swift rules that read them later.
function dl.config(t)
  allowed("dl.config")
  local refuse = fail
  if type(t) ~= "table" then refuse("dl.config wants a table") end
  for k, v in pairs(t) do
    local want = CONFIG_KEYS[k]
    if want == nil then refuse(unknown("config key", k, CONFIG_ORDER)) end
    if want ~= "any" and type(v) ~= want then
      refuse("config key '" .. k .. "' wants a " .. want .. ", not a " .. type(v))
    end
    local def = CONFIG_DEFS[k]
    if def and def.range and type(v) == "number" then v = checked_number("dl.config: ", CONFIG_DEFS, k, v) end
    if k == "env" then
      for i, name in pairs(v) do
        if math_tointeger(i) == nil or type(name) ~= "string" or name == "" then
          refuse("config key 'env' wants a list of variable names, like { \"API_TOKEN\" }")
        end
        allowed_job[name] = true
      end
    else
      local problem = raw.checkconfig(k, v)
      if problem then refuse(problem) end
    end
    config[k] = v
  end
end

-- What JSON can hold of a meta value, for --json finished events: strings,
-- finite numbers, booleans, and tables of them keyed by strings or integers
-- (32 levels deep); anything else (functions, dl.json.null, NaN) is left out.
local function json_safe(v, depth)
  local t = type(v)
  if t == "string" or t == "boolean" then return v end
  if t == "number" then
    if v ~= v or v == 1 / 0 or v == -1 / 0 then return nil end
    return v
  end
  if t ~= "table" or depth > 32 then return nil end
  local out = {}
  for k, x in next, v do
    if type(k) == "string" or math_type(k) == "integer" then
      local safe = json_safe(x, depth + 1)
      if safe ~= nil then out[k] = safe end
    end
  end
  return out
end
-- The meta as JSON text, or nil when nothing of it is JSON (or it does not
-- encode: a table that mixes list and string keys, bytes that are not UTF-8).
local function meta_json(meta)
  local safe = json_safe(meta, 1)
  if safe == nil then return nil end
  local ok, text = pcall(raw.native.json_encode, safe)
  if ok then return text end
  return nil
end

-- dl.add's fields that have a range in api.lua, in its order.
local ADD_RANGED = {}
for _, key in ipairs(ADD_ORDER) do
  if ADD_DEFS[key].range then ADD_RANGED[#ADD_RANGED + 1] = key end
end

-- What Swift's __dl.add takes (ScriptHost+Add.swift) for a table: the fields
-- as checked here, so that a bad value is an error of this dl.add call's
-- line; dl.add adds parent, depth and meta_json, which the prelude knows.
local function add_request(spec)
  for k in pairs(spec) do
    if not ADD_KEYS[k] then fail("dl.add: " .. unknown("field", k, ADD_ORDER)) end
  end
  if type(spec.url) ~= "string" then fail("dl.add: url must be a string") end
  -- No table for an add without headers (most of them): Swift reads none then.
  local headers = nil
  if spec.headers ~= nil then
    if type(spec.headers) ~= "table" then fail("dl.add: headers must be a table") end
    headers = {}
    for k, v in pairs(spec.headers) do headers[tostring(k)] = tostring(v) end
  end
  local request = { url = spec.url, name = spec.name, dir = spec.dir, headers = headers, sha256 = spec.sha256 }
  -- Every number against its range in api.lua (priority, timeout, curl's -m, -Y and -y, max_size).
  for _, key in ipairs(ADD_RANGED) do
    if spec[key] ~= nil then request[key] = checked_number("dl.add: ", ADD_DEFS, key, spec[key]) end
  end
  if spec.into ~= nil and spec.into ~= "file" then
    if spec.into ~= "memory" then
      fail("dl.add: into wants \"file\" or \"memory\", not " .. tostring(spec.into))
    end
    if spec.name ~= nil or spec.dir ~= nil then
      fail("dl.add: a download into = \"memory\" has no file, so no name or dir")
    end
    request.into = "memory"
  end
  if spec.method ~= nil then
    local method = type(spec.method) == "string" and string_upper(spec.method) or nil
    if not ADD_METHODS[method] then
      fail("dl.add: method wants \"GET\", \"POST\", \"PUT\", \"PATCH\" or \"DELETE\", not " .. tostring(spec.method))
    end
    request.method = method
  end
  if spec.body ~= nil then
    if type(spec.body) ~= "string" then
      fail("dl.add: body wants a string (dl.json.encode(t) or dl.url.query(t) makes one), not a " .. type(spec.body))
    end
    request.body = spec.body
  end
  if spec.meta ~= nil then request.meta_json = meta_json(spec.meta) end
  return request
end

function dl.add(spec)
  allowed("dl.add")
  -- A bare URL (most adds, and every add of a long list) has no field to
  -- check, and crosses into Swift as a string: no table to build or read.
  local request, url, meta = nil, spec, nil
  if type(spec) == "table" then
    request = add_request(spec)
    url, meta = spec.url, spec.meta
  elseif type(spec) ~= "string" then
    fail("dl.add wants a URL or a table")
  end
  local parent = current and current.id or nil
  -- d.depth: 0 for the job's own adds (top level, done), the parent's + 1 for
  -- an add from a handler of a download. Past max_depth, or past
  -- max_downloads, the add returns nil and warns once: the download whose
  -- handler made it does not fail.
  local depth = parent and ((depths[parent] or current.depth or 0) + 1) or 0
  if config.max_depth ~= nil and depth > config.max_depth then
    if not warned_limit.max_depth then
      warned_limit.max_depth = true
      -- A notice, not a warning: a crawl limits its depth on purpose, and -q
      -- keeps it out of cron's mail (--json still has it as a warning event).
      raw.notice((script_position()), parent, "dl.add: " .. url .. " would be at depth " .. depth
        .. ", past max_depth = " .. config.max_depth .. "; adds past it are dropped")
    end
    return nil
  end
  -- The id, or nil, why ("error", "limit": past max_downloads, "refused": a
  -- URL past the length limit) and the message.
  local ok, id, why, message
  if request then
    request.parent = parent
    if depth > 0 then request.depth = depth end
    ok, id, why, message = pcall(raw.add, request)
  else
    ok, id, why, message = pcall(raw.add, url, parent, depth > 0 and depth or nil)
  end
  if not ok then fail("dl.add: " .. tostring(id)) end
  -- A URL past the length limit: nil and a warning, as a bad link on a page
  -- must not fail the handler that met it.
  if not id and why == "refused" then dl.warn("dl.add: " .. message); return nil end
  if not id and why == "limit" then
    if not warned_limit.max_downloads then
      warned_limit.max_downloads = true
      dl.warn("dl.add: " .. message)
    end
    return nil
  end
  if not id then fail("dl.add: " .. tostring(message)) end
  if meta ~= nil and metas[id] == nil then metas[id] = meta; metas_known[id] = true end
  -- A depth belongs to the download's first add: a URL met again (in any
  -- spelling that normalises to it) gives back the first id and keeps its
  -- depth, even 0, which is not stored.
  if id > newest_id then
    newest_id = id
    if depth > 0 then depths[id] = depth end
  end
  return id
end

function dl.on(event, fn)
  allowed("dl.on")
  if not EVENTS[event] then fail(unknown("event", event, API.event_order)) end
  if type(fn) ~= "function" then fail("dl.on: the handler must be a function") end
  positions[fn] = script_position()
  if context == "hook" then hook_handlers[fn] = true end
  table_insert(handlers[event], fn)
end

function dl.skip(reason)
  allowed("dl.skip")
  recorded, recorded_extra = SKIP, tostring(reason or "skipped by a hook")
  return recorded, recorded_extra
end

local RETRY_RANGE = API.defs.calls["dl.retry"].params[1].range
function dl.retry(seconds)
  allowed("dl.retry")
  if in_range(seconds, RETRY_RANGE, false) == nil then
    fail("dl.retry wants a delay, " .. range_text(RETRY_RANGE, false) .. ", not " .. shown(seconds))
  end
  recorded, recorded_extra = RETRY, seconds
  return recorded, recorded_extra
end

function dl.handled()
  allowed("dl.handled")
  recorded, recorded_extra = HANDLED, nil
  return recorded
end

-- In a worker of a shared queue, a control that reached no download says
-- why (another worker holds it, or it ended): it had done nothing silently.
local function control(name, fn)
  return function(id)
    allowed(name)
    if math_tointeger(id) == nil then fail(name .. " wants a download id") end
    local untouched = fn(id)
    if untouched then dl.warn(name .. "(" .. tostring(id) .. "): " .. untouched) end
  end
end
dl.pause = control("dl.pause", raw.pause)
dl.resume = control("dl.resume", raw.resume)
dl.cancel = control("dl.cancel", raw.cancel)

function dl.read(path)
  allowed("dl.read")
  if type(path) ~= "string" then fail("dl.read wants a path") end
  local data, err = raw.read(path)
  if data == nil then fail("dl.read: " .. err) end
  return data
end

-- A folder inside the output directory (ConfinedDirectory.swift: dl.read's confinement).
function dl.list(dir)
  allowed("dl.list")
  if dir == nil then dir = "" end
  if type(dir) ~= "string" then fail("dl.list wants a folder's path (\"\" or nothing for the output directory)") end
  local entries, err = raw.list(dir)
  if entries == nil then fail("dl.list: " .. err) end
  return entries
end

-- The script kit (kit.lua, and dl_kit.h's C functions under raw.native): pure
-- functions anywhere, the files a script writes in handlers (ScriptFiles.swift).
local kit = raw.kit(raw)
dl.url = { resolve = raw.resolve, parse = raw.parse, encode = kit.url.encode, decode = kit.url.decode,
  query = kit.url.query }
dl.json = { decode = raw.native.json_decode, encode = raw.native.json_encode, null = raw.native.json_null }
dl.xml = { parse = raw.native.xml_parse }
dl.html = { links = kit.html.links }
dl.http = { links = kit.http.links }
dl.gunzip = raw.native.gunzip
dl.time = { parse = kit.time.parse }
function dl.sha256(s)
  if type(s) ~= "string" then error("dl.sha256 wants a string (dl.read(path) gives a file's)", 2) end
  return raw.sha256_string(s)
end
local function file_call(name, primitive, wants_data)
  return function(path, data)
    allowed(name)
    -- fail: the script's line even when the call is pcall(dl.remove, path)'s.
    if type(path) ~= "string" then fail(name .. " wants a path") end
    if wants_data and type(data) ~= "string" then
      fail(name .. " wants the data as a string, not a " .. type(data))
    end
    local ok, err = primitive(path, data, config.dir)
    if not ok then fail(name .. ": " .. tostring(err)) end
  end
end
dl.write = file_call("dl.write", raw.write, true)
dl.append = file_call("dl.append", raw.append, true)
dl.remove = file_call("dl.remove", raw.remove, false)

-- The sanitiser server names go through: one safe file name, or nil when
-- nothing usable is left.
function dl.safename(s)
  if type(s) ~= "string" then fail("dl.safename wants a string") end
  return raw.safename(s)
end
dl.var = raw.vars

-- A line for the person who runs the job: dl.log's show unless -q, dl.warn's always.
local function line(write, ...)
  local parts = {}
  for i = 1, select("#", ...) do parts[#parts + 1] = tostring((select(i, ...))) end
  local id = current and current.id or nil
  write((script_position()), id, table_concat(parts, "\t"))
end
function dl.log(...) line(raw.log, ...) end
function dl.warn(...) line(raw.warn, ...) end
print = dl.log

dl.store = {
  get = function(key)
    if type(key) ~= "string" then fail("dl.store.get wants a string key") end
    local ok, value, err = pcall(raw.store_get, key, config.dir)
    if not ok then fail("dl.store.get: " .. tostring(value)) end
    if err then fail("dl.store.get: " .. err) end
    return value
  end,
  set = function(key, value)
    if type(key) ~= "string" then fail("dl.store.set wants a string key") end
    -- pcall: an argument too large for Swift is refused with an error, named at the script's line
    local called, ok, err = pcall(raw.store_set, key, value, config.dir)
    if not called then fail("dl.store.set: " .. tostring(ok)) end
    if not ok then fail("dl.store.set: " .. err) end
  end,
}

-- A name under dl that api.lua does not have is an error when it is read,
-- with the nearest real name: what `check`'s scan says of the names it can
-- see, for those it cannot (`dl[name]`, `local d = dl; d.lgo()`). dl.var's
-- members are the --var names: an unset one reads as nil.
local function strict_names(t, prefix, node)
  local function refuse(_, k) error(raw.lint.unknown_name(prefix, tostring(k), node), 2) end
  if prefix == "dl" then
    setmetatable(t, { __index = refuse, __newindex = function() fail("dl is read-only") end })
  else
    setmetatable(t, { __index = refuse })
  end
  for name, child in pairs(node) do
    local member = rawget(t, name)
    if type(child) == "table" and type(member) == "table" and getmetatable(member) == nil then
      strict_names(member, prefix .. "." .. name, child)
    end
  end
end
strict_names(dl, "dl", raw.lint.names)
_G.dl = dl

-- The download as a handler sees it: name, dir and meta may be assigned;
-- the rest is read-only.
local WRITABLE = API.writable
local DOWNLOAD_FIELDS, WRITABLE_NAMES = {}, {}
for _, name in ipairs(API.download) do DOWNLOAD_FIELDS[name] = true end
for name in pairs(WRITABLE) do WRITABLE_NAMES[#WRITABLE_NAMES + 1] = name end
table.sort(WRITABLE_NAMES)
WRITABLE_NAMES = table_concat(WRITABLE_NAMES, ", ")
-- One metatable for every proxy; each proxy finds its fields in a weak table.
-- (A metatable with three fresh closures per event was most of an event's
-- cost in the Lua interpreter; a state table per proxy cost allocations.)
local states = setmetatable({}, { __mode = "k" })
local PROXY = {
  __index = function(proxy, k)
    local fields = states[proxy]
    if k == "meta" then
      local id = fields.id
      if not metas_known[id] and fields.meta_json then
        -- Added elsewhere (another worker of a shared queue, or before the
        -- queue numbered it): the meta the add gave, as JSON can hold it.
        metas_known[id] = true
        local ok, decoded = pcall(raw.native.json_decode, fields.meta_json)
        if ok and type(decoded) == "table" then metas[id] = decoded end
      end
      return metas[id]
    end
    -- Added elsewhere (another worker of a shared queue): the depth its add gave.
    if k == "depth" then return depths[fields.id] or fields.depth or 0 end
    local value = fields[k]
    if value == nil and not DOWNLOAD_FIELDS[k] then
      error("d." .. tostring(k) .. ": " .. unknown("download field", k, API.download), 2)
    end
    return value
  end,
  __newindex = function(proxy, k, v)
    local fields = states[proxy]
    local want = WRITABLE[k]
    if want == nil then
      if not DOWNLOAD_FIELDS[k] then error("d." .. tostring(k) .. ": " .. unknown("download field", k, API.download), 2) end
      error("d." .. tostring(k) .. " is read-only (writable: " .. WRITABLE_NAMES .. ")", 2)
    end
    if type(v) ~= want then error("d." .. k .. " wants a " .. want, 2) end
    -- A name is one file name: a folder goes in d.dir, so that a "/" from a
    -- title or a header never makes folders by accident (dl.safename cleans one).
    if k == "name" and (v:find("/", 1, true) or v == "" or v == "." or v == "..") then
      error("d.name is one file name, not " .. string_format("%q", v)
        .. ": a folder goes in d.dir, which must stay inside the output directory"
        .. " (dl.safename(s) makes any text a safe name)", 2)
    end
    if k ~= "meta" then
      local name, dir = fields.name, fields.dir
      if k == "name" then name = v else dir = v end
      -- Checked here so the error names the line that set it.
      local problem = raw.checkpath(dir, name)
      if problem then error(problem, 2) end
    end
    if k == "meta" then metas[fields.id] = v; metas_known[fields.id] = true else
      fields[k] = v
      -- A proxy kept past its event renames nothing.
      if fields == current then current_changed = true end
    end
  end,
  __tostring = function(proxy) return "download " .. tostring(states[proxy].id) end,
  __metatable = false,
}
local function make_proxy(fields)
  local proxy = setmetatable({}, PROXY)
  states[proxy] = fields
  return proxy
end

-- Called by Swift around each event: begin, one call per handler, finish.
local host = {}
-- Strict event tables: a handler that reads a name no event's table has
-- (`r.lenght`, `f.sah256`) gets an error naming it and the nearest field of
-- its event; a field an event may leave out (r.length, f.sha256 before it is
-- read) still reads as nil, and a name of another event's table too, so one
-- handler can serve several events. Writing a new name is an error that lists
-- the event's fields. Only names absent from the table reach these metamethods:
-- the fields a handler reads cost what they did.
local EVENT_FIELDS = {}
for _, names in pairs(API.events) do
  for _, name in ipairs(names) do EVENT_FIELDS[name] = true end
end
local function strict(event, index)
  local names, letter = API.events[event], API.defs.event_args[event]
  local function refuse(k, level)
    error(letter .. "." .. tostring(k) .. ": " .. unknown(event .. " field", k, names), level + 1)
  end
  return {
    __index = function(t, k)
      if index and k == "sha256" then return index(t) end
      if EVENT_FIELDS[k] then return nil end
      refuse(k, 2)
    end,
    __newindex = function(t, k, v)
      if EVENT_FIELDS[k] then return rawset(t, k, v) end
      refuse(k, 2)
    end,
    __metatable = false,
  }
end
-- Hashing costs nothing until a handler reads f.sha256 (in finished's and placed's metatables).
local function lazy_sha256(t)
  -- A memory download's digest is its body's (it has no path).
  local digest
  if rawget(t, "body") ~= nil then digest = raw.sha256_string(t.body) else digest = raw.sha256(t.path) end
  rawset(t, "sha256", digest)
  return digest
end
-- One metatable per event, made once.
local STRICT = {}
for event in pairs(API.events) do STRICT[event] = strict(event, (event == "finished" or event == "placed") and lazy_sha256 or nil) end
function host.begin(event, fields, arg)
  context = event
  if arg then setmetatable(arg, STRICT[event]) end
  current, current_changed = fields, false
  current_proxy = fields and make_proxy(fields) or nil
  current_arg = arg
  return #handlers[event]
end

local RETURNS = API.returns
local RESERVED_EXIT = API.reserved_exit_codes

-- What a handler's return value means, or a hook error naming what it may return.
local function verdict(event, handler, result, extra)
  if RETURNS[event] == nil then return nil end    -- progress, finished: no verdict
  if result == SKIP then return "skip", extra end  -- each call checks where it may be made
  if result == RETRY then return "retry", extra end
  if result == HANDLED then return "handled" end
  if result == false and (event == "retrying" or event == "failed") then return "giveup" end
  if event == "done" and math_type(result) then
    local code = math_tointeger(result)
    if code and code >= 0 and code <= 125 and not RESERVED_EXIT[code] then return "exit", code end
  end
  -- Worded by lint.lua, whose static pass says the same of a literal return.
  error((positions[handler] or "") .. raw.lint.return_problem(event, result), 0)
end

function host.run(event, index)
  local handler = handlers[event][index]
  running, recorded = handler, nil
  -- done has no download: its handlers get the summary first (and second).
  local first = current_proxy or current_arg
  local result, extra = handler(first, current_arg)
  running = nil
  if result == nil then
    if recorded == nil then return nil end
    result, extra = recorded, recorded_extra
  end
  -- Only the job's own done sets the exit code: a drop-in hook cannot turn a
  -- failed run into 0 for cron (or fail a good one). Its return is dropped.
  if event == "done" and hook_handlers[handler] then
    if not hook_done_warned[handler] then
      hook_done_warned[handler] = true
      raw.warn(positions[handler] or "", nil, "a done handler of a drop-in hook returns nothing (only the job's own"
        .. " done sets the exit code), not " .. (type(result) == "table" and "a table" or tostring(result)) .. ": ignored")
    end
    return nil
  end
  return verdict(event, handler, result, extra)
end

-- Returns the name and dir a handler assigned, and for a request event the
-- headers table (q.headers) as the handlers left it.
function host.finish()
  local out = nil
  if current_changed then out = { name = current.name, dir = current.dir } end
  local headers = nil
  if context == "request" and current_arg then headers = current_arg.headers end
  context, current, current_proxy, current_arg, current_changed = "job", nil, nil, nil, false
  return out, headers
end

-- begin, the one handler, finish: a single call from Swift for the usual
-- event with one handler, instead of three. If the handler fails, Swift
-- calls finish itself.
function host.once(event, fields, arg)
  host.begin(event, fields, arg)
  local verdict, extra = host.run(event, 1)
  local out, headers = host.finish()
  -- Nothing to say (the usual event): no values, so Swift builds no list of them.
  if verdict == nil and out == nil and headers == nil then return end
  return verdict, extra, out, headers
end

function host.counts()
  local c = {}
  for event, list in pairs(handlers) do c[event] = #list end
  return c
end

host.job_getenv = getenv_over(allowed_job)

function host.set_context(name, script) context, loading = name, script end
function host.config() return config end

return host
