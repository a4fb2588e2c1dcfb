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
local function handlers() return { "response", "progress", "retrying", "finished", "failed", "done" } end

return {
  calls = {
    { name = "dl.config", args = "{ key = value, ... }", where = { "job" } },
    { name = "dl.add", args = "url | { url=, name=, dir=, headers=, sha256=, meta=, priority= }",
      where = { "top", "response", "finished", "failed", "done" } },
    { name = "dl.on", args = "event, handler", where = { "top" } },
    { name = "dl.skip", args = "reason", where = { "response" } },
    { name = "dl.retry", args = "seconds", where = { "retrying", "failed" } },
    { name = "dl.handled", args = "", where = { "failed" } },
    { name = "dl.pause", args = "id", where = handlers() },
    { name = "dl.resume", args = "id", where = handlers() },
    { name = "dl.cancel", args = "id", where = handlers() },
    { name = "dl.read", args = "path", where = handlers() },
    { name = "dl.url.resolve", args = "base, ref", where = { "anywhere" } },
    { name = "dl.url.parse", args = "url", where = { "anywhere" } },
    { name = "dl.safename", args = "s", where = { "anywhere" } },
    { name = "dl.log", args = "...", where = { "anywhere" } },
    { name = "dl.store.get", args = "key", where = { "anywhere" } },
    { name = "dl.store.set", args = "key, value", where = { "anywhere" } },
    -- The script kit: pure functions, and the files a script writes.
    { name = "dl.json.decode", args = "text", where = { "anywhere" } },
    { name = "dl.json.encode", args = "value", where = { "anywhere" } },
    { name = "dl.xml.parse", args = "text", where = { "anywhere" } },
    { name = "dl.html.links", args = "body, base", where = { "anywhere" } },
    { name = "dl.gunzip", args = "data", where = { "anywhere" } },
    { name = "dl.sha256", args = "s", where = { "anywhere" } },
    { name = "dl.url.encode", args = "s", where = { "anywhere" } },
    { name = "dl.url.decode", args = "s", where = { "anywhere" } },
    { name = "dl.url.query", args = "{ key = value, ... }", where = { "anywhere" } },
    { name = "dl.time.parse", args = "s", where = { "anywhere" } },
    { name = "dl.write", args = "path, data", where = handlers() },
    { name = "dl.append", args = "path, line", where = handlers() },
    { name = "dl.remove", args = "path", where = handlers() },
  },
  -- Tables of values rather than calls.
  values = {
    { name = "dl.var", args = ".NAME", where = { "anywhere" } },
    { name = "dl.json.null", args = "", where = { "anywhere" } },
  },
  -- The fields of each event's second argument (a field may be nil when unknown).
  events = {
    response = { "status", "headers", "type", "length", "filename", "url" },
    progress = { "bytes", "total", "fraction", "rate", "eta" },
    finished = { "path", "bytes", "sha256", "type", "seconds", "unchanged" },
    retrying = { "kind", "message", "status", "attempt", "retry_after" },
    failed = { "kind", "message", "status", "attempt", "retry_after" },
    done = { "finished", "failed", "handled", "skipped", "unchanged", "cancelled", "bytes", "seconds" },
  },
  -- The order events are listed in (docs and messages).
  event_order = { "response", "progress", "retrying", "finished", "failed", "done" },
  -- What a handler of each event may return (the values that are verdicts); any
  -- other value is a hook error that names these. Events not listed (progress,
  -- finished) take no verdict: what their handlers return is not looked at.
  returns = {
    response = "nothing or dl.skip(reason)",
    retrying = "nothing, dl.retry(seconds) or false",
    failed = "nothing, dl.retry(seconds), dl.handled() or false",
    done = "nothing or an exit code (0, 1 or 5-125)",
  },
  -- Exit codes that dlpipe gives a meaning of its own: a done handler may not return them.
  reserved_exit_codes = {
    [2] = "a usage or load error", [3] = "another run holds the lock",
    [4] = "the shared queue cannot be reached", [130] = "stopped by a signal",
  },
  -- The download `d` every handler but done's gets; only name, dir and meta may be assigned.
  download = { "id", "url", "name", "dir", "path", "meta", "parent", "attempt" },
  writable = { name = "string", dir = "string", meta = "table" },
}
