-- A retry policy with a fallback mirror: server errors are retried on the
-- primary once, after a short delay; when the primary fails for good (a 404
-- at once, a 5xx after its retry), the same path is fetched from the mirror
-- and the primary's failure is marked handled: it does not count as failed,
-- -q does not print it, and the run exits 0 when every mirror download worked.
--
--   dlpipe run examples/retry/job.lua --var primary=http://a/files --var mirror=http://b/files
local primary = dl.var.primary or error("give --var primary=URL")
local mirror = dl.var.mirror or error("give --var mirror=URL")

dl.config{ dir = "retry-out", retries = 1 }

for _, path in ipairs{ "notes.txt", "img/harbour.jpg", "docs/manual.pdf" } do
  dl.add{ url = primary .. "/" .. path, meta = { path = path } }
end

-- Before each retry: mirror downloads are not retried; the primary waits a
-- little longer each time.
dl.on("retrying", function(d, e)
  if not (d.meta and d.meta.path) then return false end
  return dl.retry(0.1 * e.attempt)
end)

-- Once, when no retry follows.
dl.on("failed", function(d, e)
  local path = d.meta and d.meta.path
  if not path then return end                  -- a mirror download: it fails
  dl.log("falling back to the mirror for " .. path .. " (" .. e.message .. ")")
  dl.add{ url = mirror .. "/" .. path }
  return dl.handled()
end)
