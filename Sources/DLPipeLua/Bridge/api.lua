-- The dl API in one table: every call (its arguments and where it may be called),
-- every dl.config key and dl.add field (type, range, default, doc) and every event
-- (the fields of its second argument). The prelude's checks read it, and so do
-- JobSettings' bounds (APIRanges.swift) and `dlpipe lua-defs`; scripts/lua-api-docs
-- writes docs/lua-api.md's tables from it; tests tie the docs, the live `dl` table,
-- JobSettings and the event arguments the engine pushes to it, so none of them can
-- drift from the others (docs/design/lua-api-table.md).
--
-- Where a call may be called: "job" (the job file's top level), "top" (the top level
-- of the job or of a drop-in hook), an event name (inside a handler of that event),
-- or "anywhere".

-- A fresh list each time: the table reaches the prelude through Swift's value
-- conversion, which keeps one copy of a table met twice and drops the others.
local function handlers() return { "request", "response", "progress", "retrying", "finished", "failed", "done", "placed" } end

-- dl.config's keys and dl.add's fields: one entry each, in the order docs,
-- messages and the definition file list them: { name, type, doc, range =,
-- default = } (see `defs` below for types and ranges). A new key is one entry
-- here, and the Swift that uses its value (a JobSettings property; a test
-- fails until it is read): the prelude's checks, JobSettings' bounds,
-- `dlpipe lua-defs` and the tables of docs/lua-api.md come from it
-- (run scripts/lua-api-docs; APITableTests fails when the docs differ).
local CONFIG = {
  { "dir", "string?", "output directory (`-d`)",
    default = "`.`" },
  { "concurrency", "integer?", "transfers at once (`-j`)", range = { 1, 1000 },
    default = "8" },
  { "per_host", "integer?", "transfers at once per host (`--per-host`), counted against the host a redirect leads to", range = { 1, 1000 },
    default = "4" },
  { "retries", "integer?", "retries of network errors, timeouts, 408, 429, 5xx (`--retries`)", range = { 0, 100 },
    default = "3" },
  { "timeout", "number?", "an attempt with no progress that long fails (`--timeout`)", range = { 0, 86400, above = true },
    default = "30" },
  { "max_time", "number?", "an attempt (its redirect hops included) that takes longer fails with kind `timeout`, however steadily bytes arrive (`-m/--max-time`, as curl's)", range = { 0, 86400, above = true },
    default = "none" },
  { "speed_limit", "integer|string?", "an attempt slower than this over `speed_time` fails with kind `timeout` (`-Y/--speed-limit`); time spent waiting for a handler does not count", range = { 1, 1000000000000, unit = "bytes per second" },
    default = "none" },
  { "speed_time", "number?", "the span `speed_limit` is measured over (`-y/--speed-time`)", range = { 0, 86400, above = true },
    default = "30" },
  { "split", "integer?", "the most connections one large file is fetched over, by byte ranges, when its server takes ranges for a strong validator; each connection gets at least 1 MiB and counts against `per_host` (`--split`, as aria2's)", range = { 1, 64 },
    default = "1" },
  { "rate", "integer|string?", "total bytes per second of the whole run, all transfers together (`--rate` wins); `K`, `M`, `G` are 1024, 1024², 1024³", range = { 1, 1000000000000, unit = "bytes per second" },
    default = "none" },
  { "refresh", "\"conditional\"|\"never\"|\"always\"?", "re-run policy (takes effect with the state store; `--refresh`)",
    default = "conditional" },
  { "budget", "number?", "time each handler call may run", range = { 0, 86400, above = true },
    default = "2" },
  { "max_downloads", "integer?", "how many downloads `dl.add` may queue in one run; past it `dl.add` returns nil and warns once. With a shared queue, set here it counts the run's downloads over every worker (docs/scale-out.md)", range = { 1, 10000000 },
    default = "250000" },
  { "host_delay", "number?", "at least this long between the starts of two requests to one host, redirect hops and retries included (`--host-delay`); a 429 or 503 with `Retry-After` holds back the whole host in any case", range = { 0, 86400 },
    default = "0" },
  { "robots", "boolean?", "fetch each host's `/robots.txt` before its first request (once per run, asked conditionally on a re-run) and obey it for dlpipe's user agent and `*` by RFC 9309: a URL it disallows ends skipped with the reason `robots.txt` and is never requested, and its `Crawl-delay` (at most 60 s) is the host's delay when longer than `host_delay` (`--robots`; either one turns it on)",
    default = "false" },
  { "max_depth", "integer?", "the deepest `d.depth` `dl.add` queues; a deeper add returns nil and warns once (`max_depth = 0`: only the job's own adds)", range = { 0, 1000000 },
    default = "none" },
  { "max_done", "integer?", "the most times `done` fires in a run: a `done` handler that adds downloads starts the queue again, and past this many one warning is shown, the handlers run no more and the run ends normally", range = { 1, 1000000 },
    default = "1000" },
  { "proxy", "string?", "the proxy URL (`-x`); `\"\"` for none",
    default = "the environment's" },
  { "noproxy", "string?", "hosts reached directly (`--noproxy`)",
    default = "the environment's `no_proxy`" },
  { "max_redirs", "integer?", "redirect hops followed per download (`--max-redirs`)", range = { 0, 1000 },
    default = "10" },
  { "allow_insecure_redirects", "boolean?", "follow redirects from https to http (`--allow-insecure-redirects`; either one turns it on)",
    default = "false" },
  { "cookie", "string?", "a Netscape cookie file whose cookies every request sends where they match (`-b`; a missing file is an empty jar); relative to the current directory",
    default = "none" },
  { "cookie_jar", "string?", "where the session's cookies (those of `cookie` and every `Set-Cookie`, a redirect's included) are written when the queue drains, mode 0600 (`-c`)",
    default = "none" },
  { "env", "string[]?", "environment variables the job's own `os.getenv` may read, on top of `--allow-env` (drop-in hooks do not get them)",
    default = "none" },
  { "compressed", "boolean?", "ask for compressed transfers and store decoded bytes; compressed files (`.gz`, archives' media types) are stored as sent (`--compressed`; either one turns it on)",
    default = "false" },
  { "mtime", "boolean?", "set each file's modification time from `Last-Modified` (false: `--no-mtime`; the command line wins)",
    default = "true" },
  { "overwrite", "boolean?", "a new body replaces a regular file under its name instead of going beside it as `name.1.ext`, and a changed file an earlier run placed is fetched again and replaced (`--overwrite`; either one turns it on). A name a handler sets is never replaced",
    default = "false" },
  { "verify", "boolean?", "on a re-run, hash each kept file again before asking about it: one that differs from its known SHA-256 (`sha256` of `dl.add`, or the state's) is fetched unconditionally and replaces it, with a warning, even a file the user changed; a file with no known SHA-256 gets one recorded. Every body is hashed as it streams. Under `refresh = \"never\"` a file that matches is kept without a request (`--verify`; either one turns it on)",
    default = "false" },
  { "queue", "string?", "the shared queue: a `postgresql://` URL or libpq `key=value` pairs (`--queue` and `DLPIPE_QUEUE` win; `--name` is required with it). One that is not a PostgreSQL address is a load error. Call it before the job prints, logs, uses `dl.store` or adds anything: with `--name` (or `--lease`, `--settle`, `--follow`) and no queue on the command line, the job's first print, log or `dl.store` call is a usage error (exit 2) unless the queue is named by then. The run is then one worker of the job shared there: docs/scale-out.md",
    default = "none" },
}
local ADD = {
  { "url", "string", "an http or https URL" },
  { "name", "string?", "the file name" },
  { "dir", "string?", "the folder inside the output directory" },
  { "headers", "table<string, string>?", "request headers for this URL's host" },
  { "sha256", "string?", "the expected SHA-256 in hex" },
  { "meta", "any", "any value, `d.meta` in its handlers" },
  { "priority", "integer?", "higher runs first (default 0)", range = { -1000000000, 1000000000 } },
  { "timeout", "number?", "seconds without progress before an attempt of this download fails", range = { 0, 86400, above = true } },
  { "max_time", "number?", "the most seconds an attempt of this download may take", range = { 0, 86400, above = true } },
  { "speed_limit", "integer?", "bytes per second below which (over `speed_time`) an attempt fails", range = { 1, 1000000000000, unit = "bytes per second" } },
  { "speed_time", "number?", "the seconds `speed_limit` is measured over", range = { 0, 86400, above = true } },
  { "split", "integer?", "the most connections for this file (`dl.config`'s `split`)", range = { 1, 64 } },
  { "max_size", "integer?", "the most bytes the body may have (kind `size` past it)", range = { 1, nil, unit = "bytes" } },
  { "into", "\"file\"|\"memory\"?", "`\"memory\"`: no file, the body is `f.body` in `finished` (default `\"file\"`)" },
  { "method", "string?", "GET, POST, PUT, PATCH or DELETE (default GET, POST with a body)" },
  { "body", "string?", "the request body (a form or JSON; set its Content-Type in headers)" },
}

-- The keyed view (defs.fields) and the order (defs.order) of a list above,
-- each entry a fresh table (a table met twice would not survive the trip
-- through Swift, see handlers()).
local function keyed(list)
  local fields, order = {}, {}
  for i, entry in ipairs(list) do
    fields[entry[1]] = { entry[2], entry[3], range = entry.range, default = entry.default }
    order[i] = entry[1]
  end
  return fields, order
end
local CONFIG_FIELDS, CONFIG_ORDER = keyed(CONFIG)
local ADD_FIELDS, ADD_ORDER = keyed(ADD)
-- dl.add's arguments as messages and docs show them: "url | { url=, name=, ... }".
local function add_args()
  local names = {}
  for i, name in ipairs(ADD_ORDER) do names[i] = name .. "=" end
  return "url | { " .. table.concat(names, ", ") .. " }"
end
-- The download's fields (d.*), in order.
local function download() return { "id", "url", "name", "dir", "path", "meta", "parent", "attempt", "depth" } end

return {
  calls = {
    { name = "dl.config", args = "{ key = value, ... }", where = { "job" } },
    { name = "dl.add", args = add_args(),
      where = { "top", "response", "finished", "failed", "done", "placed" } },
    { name = "dl.on", args = "event, handler", where = { "top" } },
    { name = "dl.skip", args = "reason", where = { "response" } },
    { name = "dl.retry", args = "seconds", where = { "retrying", "failed" } },
    { name = "dl.handled", args = "", where = { "failed" } },
    { name = "dl.pause", args = "id", where = handlers() },
    { name = "dl.resume", args = "id", where = handlers() },
    { name = "dl.cancel", args = "id", where = handlers() },
    { name = "dl.read", args = "path", where = handlers() },
    { name = "dl.list", args = "dir", where = handlers() },
    { name = "dl.url.resolve", args = "base, ref", where = { "anywhere" } },
    { name = "dl.url.parse", args = "url", where = { "anywhere" } },
    { name = "dl.safename", args = "s", where = { "anywhere" } },
    { name = "dl.log", args = "...", where = { "anywhere" } },
    { name = "dl.warn", args = "...", where = { "anywhere" } },
    { name = "dl.store.get", args = "key", where = { "anywhere" } },
    { name = "dl.store.set", args = "key, value", where = { "anywhere" } },
    -- The script kit: pure functions, and the files a script writes.
    { name = "dl.json.decode", args = "text", where = { "anywhere" } },
    { name = "dl.json.encode", args = "value", where = { "anywhere" } },
    { name = "dl.xml.parse", args = "text", where = { "anywhere" } },
    { name = "dl.html.links", args = "body, base", where = { "anywhere" } },
    { name = "dl.http.links", args = "value, base", where = { "anywhere" } },
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
    response = { "status", "headers", "type", "length", "filename", "url", "resumed_from" },
    progress = { "bytes", "total", "fraction", "rate", "eta" },
    finished = { "path", "bytes", "sha256", "type", "seconds", "unchanged", "body", "headers" },
    retrying = { "kind", "message", "status", "attempt", "retry_after" },
    failed = { "kind", "message", "status", "attempt", "retry_after" },
    done = { "finished", "failed", "handled", "skipped", "unchanged", "verified", "replaced", "cancelled", "bytes", "seconds" },
    request = { "url", "attempt", "headers" },
    placed = { "path", "bytes", "sha256", "type", "seconds", "unchanged", "body", "headers" },
  },
  -- The order events are listed in (docs and messages).
  event_order = { "response", "progress", "retrying", "finished", "failed", "done", "request", "placed" },
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
    [2] = "a usage or load error stops it", [3] = "another run holds the lock",
    [4] = "the shared queue cannot be reached", [130] = "stopped by a signal",
  },
  -- The download `d` every handler but done's gets; only name, dir and meta may be assigned.
  download = download(),
  writable = { name = "string", dir = "string", meta = "table" },

  -- Types and one-line docs for `dlpipe lua-defs` (a LuaLS definition file,
  -- made by luadefs.lua). Every call, value, event field and download field
  -- above has an entry (the config keys and dl.add fields theirs from the
  -- lists at the top); a test holds them to the names above and to the prelude's.
  --
  -- A number's `range` sits next to its key: { low, high } (high nil: no
  -- bound but a Lua integer's), `above = true` when low itself is refused,
  -- `unit` for the message. An "integer" type wants a whole number; every
  -- "number" here is seconds. The prelude refuses NaN, infinities, fractions
  -- where integers are wanted and anything outside it, at the script's line,
  -- before Swift converts it (JobSettings and __dl.add read the same ranges, APIRanges.swift).
  defs = {
    calls = {
      ["dl.config"] = { doc = "Run settings; the job file's top level only.", params = { { "settings", "dl.Config" } } },
      ["dl.add"] = { doc = "Queues a download and returns its id; nil past max_depth or max_downloads (with one warning).", params = { { "spec", "string|dl.AddSpec" } }, returns = "integer?" },
      ["dl.on"] = { doc = "Registers a handler of an event; top level only.", params = { { "event", "dl.Event" }, { "handler", "function" } } },
      ["dl.skip"] = { doc = "Skips the download before a byte is written (response handlers).", params = { { "reason", "string?" } }, returns = "dl.Verdict" },
      ["dl.retry"] = { doc = "Retries after `seconds` (retrying: the delay; failed: past the budget).", params = { { "seconds", "number", range = { 0, 86400 } } }, returns = "dl.Verdict" },
      ["dl.handled"] = { doc = "The failure was dealt with: the download ends handled (failed handlers).", params = {}, returns = "dl.Verdict" },
      ["dl.pause"] = { doc = "Pauses a download, keeping its part file.", params = { { "id", "integer" } } },
      ["dl.resume"] = { doc = "Queues a paused download again.", params = { { "id", "integer" } } },
      ["dl.cancel"] = { doc = "Ends a download as cancelled.", params = { { "id", "integer" } } },
      ["dl.read"] = { doc = "The bytes of a file inside the output directory.", params = { { "path", "string" } }, returns = "string" },
      ["dl.list"] = { doc = "The entries of a folder inside the output directory (\"\" or nil: the directory itself; never .dlpipe/), sorted by name.", params = { { "dir", "string?" } }, returns = "dl.Entry[]" },
      ["dl.url.resolve"] = { doc = "The absolute URL of `ref` against `base`, or nil.", params = { { "base", "string" }, { "ref", "string" } }, returns = "string?" },
      ["dl.url.parse"] = { doc = "The parts of a URL, or nil.", params = { { "url", "string" } }, returns = "dl.URL?" },
      ["dl.safename"] = { doc = "Any text as one safe file name (each / and \\ becomes _), or nil when nothing usable is left.", params = { { "s", "string" } }, returns = "string?" },
      ["dl.log"] = { doc = "A line on stderr, hidden by -q.", params = { { "...", "any" } } },
      ["dl.warn"] = { doc = "A warning line, shown under -q too (a warning event with --json).", params = { { "...", "any" } } },
      ["dl.store.get"] = { doc = "The value stored under `key` by this job, or nil.", params = { { "key", "string" } }, returns = "any" },
      ["dl.store.set"] = { doc = "Stores a value (string, number, boolean or table of them) for later runs.", params = { { "key", "string" }, { "value", "any" } } },
      ["dl.json.decode"] = { doc = "JSON text as Lua values (null is dl.json.null); an error says where it is bad.", params = { { "text", "string" } }, returns = "any" },
      ["dl.json.encode"] = { doc = "Compact JSON of a value, object keys sorted.", params = { { "value", "any" } }, returns = "string" },
      ["dl.xml.parse"] = { doc = "The root element of an XML document (name, localname, ns, attrs, children, text).", params = { { "text", "string" } }, returns = "table" },
      ["dl.html.links"] = { doc = "The absolute http(s) links of a page: { url, tag, attr } in document order.", params = { { "body", "string" }, { "base", "string" } }, returns = "table[]" },
      ["dl.http.links"] = { doc = "The links of a Link header (RFC 8288), URLs absolute against `base`: { url, rel, rels, ...parameters } in order; {} for nil.", params = { { "value", "string?" }, { "base", "string" } }, returns = "dl.Link[]" },
      ["dl.gunzip"] = { doc = "The inflated data of a gzip file; bounded by what is left of the memory cap.", params = { { "data", "string" } }, returns = "string" },
      ["dl.sha256"] = { doc = "The SHA-256 of a string, in lower-case hex.", params = { { "s", "string" } }, returns = "string" },
      ["dl.url.encode"] = { doc = "Percent-encodes every byte but the unreserved characters.", params = { { "s", "string" } }, returns = "string" },
      ["dl.url.decode"] = { doc = "Undoes %XX escapes.", params = { { "s", "string" } }, returns = "string" },
      ["dl.url.query"] = { doc = "A query string of a table, keys sorted, lists as repeated keys.", params = { { "params", "table" } }, returns = "string" },
      ["dl.time.parse"] = { doc = "Seconds since 1970 of an RFC 822/1123 or RFC 3339 date, or nil.", params = { { "s", "string" } }, returns = "number?" },
      ["dl.write"] = { doc = "Writes a file of the script's own in the output directory, replaced atomically.", params = { { "path", "string" }, { "data", "string" } } },
      ["dl.append"] = { doc = "Appends a line to a file of the script's own in the output directory.", params = { { "path", "string" }, { "line", "string" } } },
      ["dl.remove"] = { doc = "Removes a file this job wrote, or a download's file (then forgotten by the state).", params = { { "path", "string" } } },
    },
    values = {
      ["dl.var"] = { doc = "The --var NAME=VALUE strings.", type = "table<string, string>" },
      ["dl.json.null"] = { doc = "JSON's null, as dl.json.decode gives it and dl.json.encode takes it.", type = "lightuserdata" },
    },
    -- The class of each event's second argument, and of the other tables.
    event_classes = { response = "dl.Response", progress = "dl.Progress", retrying = "dl.Failure",
      finished = "dl.Finished", failed = "dl.Failure", done = "dl.Summary", request = "dl.Request", placed = "dl.Finished" },
    -- The argument's name in the docs, and the type of what a handler returns (see `returns`).
    event_args = { response = "r", progress = "p", retrying = "e", finished = "f", failed = "e", done = "s", request = "q", placed = "f" },
    handler_returns = { response = "dl.Verdict?", retrying = "dl.Verdict|false|nil",
      failed = "dl.Verdict|false|nil", done = "integer?" },
    classes = {
      { name = "dl.Download", of = "download", doc = "The download a handler runs for (name, dir and meta may be assigned)." },
      { name = "dl.Response", of = "response", doc = "The 2xx response that will give the file." },
      { name = "dl.Progress", of = "progress", doc = "How far a transfer is." },
      { name = "dl.Failure", of = "failed", doc = "Why an attempt failed (retrying and failed)." },
      { name = "dl.Finished", of = "finished", doc = "The file a download gave." },
      { name = "dl.Summary", of = "done", doc = "The run's counts when the queue drained." },
      { name = "dl.Request", of = "request", doc = "The request about to go out (an attempt or a redirect hop)." },
      { name = "dl.Config", of = "config", doc = "dl.config's settings." },
      { name = "dl.AddSpec", of = "add", doc = "dl.add's table." },
      { name = "dl.URL", of = "url", doc = "dl.url.parse's result." },
      { name = "dl.Entry", of = "entry", doc = "One entry of dl.list." },
      { name = "dl.Link", of = "link", doc = "One link of dl.http.links; its other parameters (title, type, ...) are fields too, names in lower case." },
    },
    fields = {
      download = {
        id = { "integer", "the download's id" }, url = { "string", "the URL added" },
        name = { "string", "the file name; assign to rename (one name, no /)" },
        dir = { "string", "the folder inside the output directory; \"\" for the top" },
        path = { "string", "the absolute path of the file" }, meta = { "any", "the meta given to dl.add" },
        parent = { "integer?", "the download whose handler added this one" },
        attempt = { "integer", "the attempt, from 1" },
        depth = { "integer", "0 for the job's own adds, the parent's depth + 1 for an add from its handler" },
      },
      response = {
        status = { "integer", "the HTTP status as the server sent it (2xx: 206 when resumed_from is set)" }, headers = { "table<string, string|string[]>", "the headers, names in lower case; set-cookie is a list" },
        type = { "string", "the media type without parameters" }, length = { "integer?", "the body's length, when known" },
        filename = { "string?", "the server's name for the file, sanitised" }, url = { "string", "the URL after redirects" },
        resumed_from = { "integer?", "the byte a 206 continues the part file from; nil when the body is the whole file" },
      },
      progress = {
        bytes = { "integer", "bytes so far" }, total = { "integer?", "the whole size, when known" },
        fraction = { "number?", "bytes / total" }, rate = { "number", "bytes per second" }, eta = { "number?", "seconds left" },
      },
      finished = {
        path = { "string?", "the file's path (nil for a memory download)" }, bytes = { "integer", "its size" },
        body = { "string?", "the body of a memory download (into = \"memory\")" },
        sha256 = { "string?", "its SHA-256 in hex, computed when first read" }, type = { "string", "the media type" },
        seconds = { "number", "how long the download took" }, unchanged = { "boolean", "kept from an earlier run" },
        headers = { "table<string, string|string[]>", "the final response's headers (the body's, or the 304's), as r.headers; {} for a file kept without a request" },
      },
      failed = {
        kind = { "string", "http, network, timeout, checksum, io, hook, cancelled, url, tls, proxy or size" },
        message = { "string", "what went wrong" }, status = { "integer?", "the HTTP status, for kind http" },
        attempt = { "integer", "the attempt that failed" }, retry_after = { "number?", "the delay in seconds before a retry" },
      },
      done = {
        finished = { "integer", "downloads finished" }, failed = { "integer", "downloads failed, not counting handled ones" },
        handled = { "integer", "failures a handler dealt with" }, skipped = { "integer", "downloads skipped" },
        unchanged = { "integer", "files kept from an earlier run" }, cancelled = { "integer", "downloads cancelled" },
        verified = { "integer", "kept files hashed again and compared with their known SHA-256 (`verify`)" },
        replaced = { "integer", "of those, files that no longer matched and were fetched again (`verify`; also in `finished`)" },
        bytes = { "integer", "bytes downloaded" }, seconds = { "number", "the run's time" },
      },
      request = {
        url = { "string", "the URL this hop asks" }, attempt = { "integer", "the attempt, from 1" },
        headers = { "table<string, string>", "this hop's headers; change in place (nil removes one)" },
      },
      entry = {
        name = { "string", "the entry's name" }, type = { "\"file\"|\"dir\"|\"link\"|\"other\"", "what it is (a symlink is a link, never followed)" },
        size = { "integer", "a file's size in bytes; 0 for the others" }, mtime = { "number", "the modification time, seconds since 1970" },
      },
      link = {
        url = { "string", "the target, absolute" }, rel = { "string?", "the relation types, lower case, one space apart (\"next last\")" },
        rels = { "table<string, true>", "each relation type as a key: l.rels.next" },
        anchor = { "string?", "the context, absolute" },
      },
      config = CONFIG_FIELDS,
      add = ADD_FIELDS,
      url = {
        scheme = { "string", "the scheme" }, host = { "string?", "the host" }, port = { "integer?", "the port, when given" },
        path = { "string", "the path" }, query = { "string?", "the query" }, fragment = { "string?", "the fragment" },
        user = { "string?", "the user name (never the password)" },
      },
    },
    -- Field order in the definition file (the events' order comes from `events`).
    order = {
      download = download(),
      config = CONFIG_ORDER,
      add = ADD_ORDER,
      url = { "scheme", "host", "port", "path", "query", "fragment", "user" },
      entry = { "name", "type", "size", "mtime" },
      link = { "url", "rel", "rels", "anchor" },
    },
  },
}
