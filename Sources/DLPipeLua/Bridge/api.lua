-- The dl API in one table: every call (its arguments and where it may be called) and
-- every event (the fields of its second argument). The prelude's context checks read
-- it; tests tie docs/lua-api.md, the live `dl` table and the event arguments the
-- engine pushes to it, so none of them can drift from the others.
--
-- Where a call may be called: "job" (the job file's top level), "top" (the top level
-- of the job or of a drop-in hook), an event name (inside a handler of that event),
-- or "anywhere".

-- A fresh list each time: the table reaches the prelude through Swift's value
-- conversion, which keeps one copy of a table met twice and drops the others.
local function handlers() return { "response", "progress", "finished", "failed", "done" } end

return {
  calls = {
    { name = "dl.config", args = "{ key = value, ... }", where = { "job" } },
    { name = "dl.add", args = "url | { url=, name=, dir=, headers=, sha256=, meta=, priority= }",
      where = { "top", "response", "finished", "failed", "done" } },
    { name = "dl.on", args = "event, handler", where = { "top" } },
    { name = "dl.skip", args = "reason", where = { "response" } },
    { name = "dl.retry", args = "seconds", where = { "failed" } },
    { name = "dl.pause", args = "id", where = handlers() },
    { name = "dl.resume", args = "id", where = handlers() },
    { name = "dl.cancel", args = "id", where = handlers() },
    { name = "dl.read", args = "path", where = handlers() },
    { name = "dl.url.resolve", args = "base, ref", where = { "anywhere" } },
    { name = "dl.url.parse", args = "url", where = { "anywhere" } },
    { name = "dl.log", args = "...", where = { "anywhere" } },
    { name = "dl.store.get", args = "key", where = { "anywhere" } },
    { name = "dl.store.set", args = "key, value", where = { "anywhere" } },
  },
  -- Tables of values rather than calls.
  values = {
    { name = "dl.var", args = ".NAME", where = { "anywhere" } },
  },
  -- The fields of each event's second argument (a field may be nil when unknown).
  events = {
    response = { "status", "headers", "type", "length", "filename", "url" },
    progress = { "bytes", "total", "fraction", "rate", "eta" },
    finished = { "path", "bytes", "sha256", "type", "seconds", "unchanged" },
    failed = { "kind", "message", "status", "attempt", "retrying", "retry_after" },
    done = { "finished", "failed", "skipped", "unchanged", "cancelled", "bytes", "seconds" },
  },
  -- The order events are listed in (docs and messages).
  event_order = { "response", "progress", "finished", "failed", "done" },
  -- The download `d` every handler but done's gets; only name, dir and meta may be assigned.
  download = { "id", "url", "name", "dir", "path", "meta", "parent", "attempt" },
  writable = { name = "string", dir = "string", meta = "table" },
}
