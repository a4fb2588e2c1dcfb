-- Writes the LuaLS definition file of `dl` (`dlpipe lua-defs`) from the API
-- table (api.lua, given as the chunk's argument): every call with its
-- parameters and result, the tables of values, and a class for the download,
-- each event's argument and the tables scripts pass in. Made from the one
-- table, so the editor's view of dl cannot drift from the checks and the docs.

local API = ...
local DEFS = API.defs
local out = {}
local function put(line) out[#out + 1] = line end

put("---@meta")
put("-- The dlpipe Lua API, for editors (lua-language-server): `dlpipe lua-defs > dl.d.lua`.")
put("-- Made from dlpipe's API table; docs/lua-api.md has the rules.")
put("")

-- A number's range (api.lua's `range`), as the field's doc ends: " (1 to 1000)".
local function range_text(range)
  if range == nil then return "" end
  local low = string.format("%d", range[1])
  if range[2] == nil then return " (from " .. low .. ")" end
  return " (" .. (range.above and "above " or "") .. low .. " to " .. string.format("%d", range[2]) .. ")"
end

-- Classes: the fields of a table, in the order of `events` or of defs.order.
for _, class in ipairs(DEFS.classes) do
  local fields = DEFS.fields[class.of]
  local order = API.events[class.of] or DEFS.order[class.of]
  put("---" .. class.doc)
  put("---@class " .. class.name)
  for _, name in ipairs(order) do
    local def = assert(fields[name], class.of .. "." .. name .. " has no type in defs.fields")
    put("---@field " .. name .. " " .. def[1] .. " " .. def[2] .. range_text(def.range))
  end
  put("")
end

put("---What dl.skip, dl.retry and dl.handled return: a handler's verdict.")
put("---@class dl.Verdict")
put("")
local quoted = {}
for _, event in ipairs(API.event_order) do quoted[#quoted + 1] = string.format("%q", event) end
put("---@alias dl.Event " .. table.concat(quoted, "|"))
put("")

put("---@class dl")
put("dl = {}")
put("dl.url = {}")
put("dl.store = {}")
put("")

for _, value in ipairs(API.values) do
  local def = assert(DEFS.values[value.name], value.name .. " has no entry in defs.values")
  put("---" .. def.doc)
  put("---@type " .. def.type)
  put(value.name .. " = {}")
  put("")
end

-- What a handler of each event gets and may return.
local function handler_type(event)
  local class, name = DEFS.event_classes[event], DEFS.event_args[event]
  -- done has no download: the summary comes first and second.
  local first = event == "done" and ("_: " .. class) or "d: dl.Download"
  local returns = DEFS.handler_returns[event]
  assert((returns == nil) == (API.returns[event] == nil), event .. ": handler_returns and returns disagree")
  return "fun(" .. first .. ", " .. name .. ": " .. class .. ")" .. (returns and (": " .. returns) or "")
end

for _, call in ipairs(API.calls) do
  local def = assert(DEFS.calls[call.name], call.name .. " has no entry in defs.calls")
  put("---" .. def.doc .. " Where: " .. table.concat(call.where, ", ") .. ".")
  local names = {}
  for _, param in ipairs(def.params) do
    names[#names + 1] = param[1]
    put("---@param " .. param[1] .. " " .. param[2])
  end
  if call.name == "dl.on" then
    for _, event in ipairs(API.event_order) do
      put(string.format("---@overload fun(event: %q, handler: %s)", event, handler_type(event)))
    end
  end
  if def.returns then put("---@return " .. def.returns) end
  put("function " .. call.name .. "(" .. table.concat(names, ", ") .. ") end")
  put("")
end

return table.concat(out, "\n")
