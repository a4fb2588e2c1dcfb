-- The static pass of `dlpipe check` (and of `run`, at load): a token scan of a
-- script's source that finds, before anything runs, the mistakes that would
-- otherwise surface at 3 a.m. in a handler:
--   * a `dl.NAME` (or `dl.NAME.NAME`) that api.lua does not know, anywhere in
--     the file, with the nearest real name;
--   * a dl call a handler may not make (`dl.skip` in `finished`), in the body
--     of a function literal given to `dl.on("event", function ... end)`;
--   * a literal a handler may not return (`return "x"` from `response`,
--     anything but nil or an exit code from the job's `done`).
-- A token scan, not a parser: a name built at run time (`dl[k]`), `dl` under
-- another name (`local d = dl`), a handler passed as a variable and calls in
-- functions nested in a handler are not followed (docs/lua-api.md, "Checking a job").
-- Called with api.lua's table; returns { scan = ..., return_problem = ..., ... } (at its end).
local API = ...

local byte, sub, find, match, format = string.byte, string.sub, string.find, string.match, string.format
local concat, insert, sort = table.concat, table.insert, table.sort -- sort: a table's names
local math_type, math_tointeger, math_max, math_min = math.type, math.tointeger, math.max, math.min

-- The names under `dl`: a tree of tables, `true` for a leaf (a call or a
-- value) and "open" for dl.var, whose members are the --var names.
local TREE = {}
local function add_name(name, leaf)
  local node, parts = TREE, {}
  for part in name:gmatch("[^.]+") do insert(parts, part) end
  for i = 2, #parts - 1 do
    if type(node[parts[i]]) ~= "table" then node[parts[i]] = {} end
    node = node[parts[i]]
  end
  node[parts[#parts]] = leaf
end
for _, call in ipairs(API.calls) do add_name(call.name, true) end
for _, value in ipairs(API.values) do add_name(value.name, value.name == "dl.var" and "open" or true) end

local WHERE = {}
for _, call in ipairs(API.calls) do WHERE[call.name] = call.where end

-- Edit distance, for the nearest name (as the prelude's "did you mean").
local function distance(a, b)
  local row = {}
  for j = 0, #b do row[j] = j end
  for i = 1, #a do
    local diagonal, left = row[0], i
    row[0] = i
    for j = 1, #b do
      local cost = (byte(a, i) == byte(b, j)) and 0 or 1
      local value = math_min(row[j] + 1, left + 1, diagonal + cost)
      diagonal, row[j], left = row[j], value, value
    end
  end
  return row[#b]
end

local function unknown_name(prefix, word, node)
  local names = {}
  for name in pairs(node) do insert(names, name) end
  sort(names)
  local message = "unknown name '" .. prefix .. "." .. word .. "'"
  local best, best_distance = nil, math_max(2, #word // 3) + 1
  for _, name in ipairs(names) do
    local d = distance(word:lower(), name)
    if d < best_distance then best, best_distance = name, d end
  end
  if best then return message .. " (did you mean '" .. prefix .. "." .. best .. "'?)" end
  return message .. "; " .. prefix .. " has: " .. concat(names, ", ")
end

-- What a handler of `event` returning `result` is wrong about, or nil when the
-- value is one it may return. The prelude's run-time check words its error
-- with this too, so both say the same. (dl.skip, dl.retry and dl.handled's
-- verdicts are the prelude's to accept before it asks.)
local RETURNS, RESERVED_EXIT = API.returns, API.reserved_exit_codes
local function return_problem(event, result)
  if RETURNS[event] == nil or result == nil then return nil end
  if result == false and (event == "retrying" or event == "failed") then return nil end
  local problem = ""
  if event == "done" and math_type(result) then
    local code = math_tointeger(result)
    if code and code >= 0 and code <= 125 and not RESERVED_EXIT[code] then return nil end
    if code and RESERVED_EXIT[code] then
      problem = ": dlpipe exits " .. code .. " when " .. RESERVED_EXIT[code]
    end
  end
  local shown = type(result) == "string" and format("%q", result)
    or (type(result) == "table" and "a table") or tostring(result)
  return "a " .. event .. " handler returns " .. RETURNS[event] .. ", not " .. shown .. problem
end

-- The tokens of a source: { kind = "name"|"string"|"number"|"op", text, line }.
-- Comments and whitespace are dropped; long brackets ([[ ]], [==[ ]==]) and
-- escapes in quoted strings are followed so that nothing inside a string or a
-- comment reads as code. An unfinished string or comment ends the scan (the
-- compiler reports it).
local function long_bracket(src, i)
  local level = match(src, "^%[(=*)%[", i)
  if not level then return nil end
  local close = "]" .. level .. "]"
  local _, e = find(src, close, i + #level + 2, true)
  return e or #src
end

local function count_lines(src, i, j)
  local n = 0
  for _ in sub(src, i, j):gmatch("\n") do n = n + 1 end
  return n
end

-- A function giving the next token each call (nil at the end): tokens are made
-- as the scan goes, so a job of a million lines is never a million tables at once.
local function tokenizer(src)
  local i, line, n = 1, 1, #src
  return function()
    while i <= n do
      local c = sub(src, i, i)
      local start = i
      if c == "\n" then
        line, i = line + 1, i + 1
      elseif c == " " or c == "\t" or c == "\r" or c == "\f" or c == "\v" then
        i = select(2, find(src, "^[ \t\r\f\v]*", i)) + 1
      elseif c == "-" and sub(src, i + 1, i + 1) == "-" then
        local e = long_bracket(src, i + 2)
        if not e then e = (find(src, "\n", i, true) or n + 1) - 1 end
        line, i = line + count_lines(src, i, e), e + 1
      elseif c == "[" and find(src, "^%[=*%[", i) then
        local e = long_bracket(src, i)
        local token = { kind = "string", text = sub(src, i, e), line = line }
        line, i = line + count_lines(src, i, e), e + 1
        return token
      elseif c == '"' or c == "'" then
        local j = i + 1
        while j <= n do
          j = find(src, c == '"' and '[\\\n"]' or "[\\\n']", j) or n + 1
          local d = sub(src, j, j)
          if d == "\\" then
            -- \z skips the white space after it, line breaks included.
            j = sub(src, j + 1, j + 1) == "z" and select(2, find(src, "^%s*", j + 2)) + 1 or j + 2
          else break end
        end
        local token = { kind = "string", text = sub(src, i, j), line = line }
        line, i = line + count_lines(src, i, j), j + 1
        return token
      elseif find(c, "^[%a_]") then
        local _, e = find(src, "^[%w_]*", i)
        i = e + 1
        return { kind = "name", text = sub(src, start, e), line = line }
      elseif find(c, "^%d") or find(src, "^%.%d", i) then
        local _, e = find(src, "^[%w%.]*", i)
        while find(sub(src, e, e), "^[eEpP]") and find(src, "^[%+%-]", e + 1) do
          _, e = find(src, "^[%+%-][%w%.]*", e + 1)
        end
        i = e + 1
        return { kind = "number", text = sub(src, start, e), line = line }
      else
        local op = match(src, "^%.%.%.", i) or match(src, "^%.%.", i) or match(src, "^::", i)
          or match(src, "^[=~<>]=", i) or c
        i = i + #op
        return { kind = "op", text = op, line = line }
      end
    end
    return nil
  end
end

-- The tokens of a source as a list read in order, made on first read: the scan
-- looks one token back and a few ahead, and drops those behind it (forget).
local function token_list(src)
  local next_token, last = tokenizer(src), 0
  local list = setmetatable({}, { __index = function(list, index)
    while last < index do
      local token = next_token()
      if token == nil then return nil end
      last = last + 1
      rawset(list, last, token)
    end
    return rawget(list, index)
  end })
  local function forget(index) list[index] = nil end
  return list, forget
end

-- The value of a literal token (a string, number, true or false), by Lua's own rules.
local function literal(token)
  if token.kind == "name" then
    if token.text == "true" then return true, true end
    if token.text == "false" then return true, false end
    if token.text == "nil" then return true, nil end
    return false
  end
  if token.kind ~= "string" and token.kind ~= "number" then return false end
  local f = load("return " .. token.text, "=literal", "t", {})
  if not f then return false end
  local ok, value = pcall(f)
  return ok, value
end

-- What may follow the last expression of a block (a return is always last).
local BLOCK_END = { ["end"] = true, ["else"] = true, ["elseif"] = true, ["until"] = true, [";"] = true }

-- The problems of one script: a list of { line = N, message = "..." } in line
-- order. `is_job`: a drop-in hook's done handlers set no exit code, so what
-- they return is not looked at.
local function scan(src, is_job)
  local toks, forget = token_list(src)
  local problems = {}
  local function report(line, message) insert(problems, { line = line, message = message }) end
  -- Blocks open: each a table; a function's carries `event` when it is a
  -- function literal given to dl.on with that event's name.
  local blocks = {}
  local function innermost_function()
    for k = #blocks, 1, -1 do
      if blocks[k].fn then return blocks[k] end
    end
    return nil
  end
  local pending_event = nil -- set between `dl.on("event",` and its `function`
  local k = 1
  while toks[k] do
    local t = toks[k]
    forget(k - 2)
    local text = t.text
    if t.kind == "name" then
      if text == "function" then
        local event = nil
        if pending_event and toks[k - 1] and toks[k - 1].text == "," and pending_event.at == k - 2 then
          event = pending_event.event
        end
        insert(blocks, { fn = true, event = event })
      elseif text == "do" or text == "if" or text == "repeat" then
        insert(blocks, {})
      elseif text == "end" or text == "until" then
        blocks[#blocks] = nil
      elseif text == "dl" and not (toks[k - 1] and toks[k - 1].kind == "op"
          and (toks[k - 1].text == "." or toks[k - 1].text == ":")) then
        -- Follow dl.a.b as far as api.lua knows the tables.
        local node, name, j = TREE, "dl", k
        while type(node) == "table" and toks[j + 1] and (toks[j + 1].text == "." or toks[j + 1].text == ":")
            and toks[j + 2] and toks[j + 2].kind == "name" do
          local word = toks[j + 2].text
          if node[word] == nil then
            report(toks[j + 2].line, unknown_name(name, word, node))
            node = nil
          else
            node, name = node[word], name .. "." .. word
          end
          j = j + 2
        end
        local after = toks[j + 1]
        local called = after and (after.text == "(" or after.text == "{" or after.kind == "string")
        if node == true and called then
          if name == "dl.on" and after.text == "(" and toks[j + 2] and toks[j + 2].kind == "string" then
            local ok, event = literal(toks[j + 2])
            -- An unknown event is the load's error (dl.on names the known ones).
            if ok and type(event) == "string" and API.events[event] then pending_event = { event = event, at = j + 2 } end
          end
          local fn = innermost_function()
          if fn and fn.event and WHERE[name] then
            local allowed = false
            for _, place in ipairs(WHERE[name]) do
              if place == fn.event or place == "anywhere" then allowed = true end
            end
            if not allowed then
              report(t.line, name .. " may not be called in a " .. fn.event .. " handler (allowed: "
                .. concat(WHERE[name], ", ") .. ")")
            end
          end
        end
        k = j
      elseif text == "return" then
        local fn = innermost_function()
        local value_token = toks[k + 1]
        if fn and fn.event and value_token and (is_job or fn.event ~= "done") then
          local ok, value, next_index = false, nil, k + 2
          if value_token.text == "{" and value_token.kind == "op" then
            -- A table constructor: find its closing brace.
            local depth, j = 0, k + 1
            while toks[j] do
              if toks[j].kind == "op" and toks[j].text == "{" then depth = depth + 1
              elseif toks[j].kind == "op" and toks[j].text == "}" then
                depth = depth - 1
                if depth == 0 then break end
              end
              j = j + 1
            end
            ok, value, next_index = toks[j] ~= nil, {}, j + 1
          else
            ok, value = literal(value_token)
          end
          local after = toks[next_index]
          if ok and (after == nil or BLOCK_END[after.text]) then
            local problem = return_problem(fn.event, value)
            if problem then report(t.line, problem) end
          end
        end
      end
    end
    k = k + 1
  end
  return problems -- in line order: the scan reports as it goes
end

-- unknown_name and names: the prelude's run-time check of dl's names (a name
-- built at run time, `dl` under another name) says what the scan says.
return { scan = scan, return_problem = return_problem, distance = distance, unknown_name = unknown_name, names = TREE }
