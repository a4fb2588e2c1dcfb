-- A retry policy with a fallback mirror: server errors are retried on the
-- primary with a growing delay; after two failures, or at once on a 404, the
-- same path is fetched from the mirror instead.
--
--   dlpipe run examples/retry/job.lua --var primary=http://a/files --var mirror=http://b/files
local primary = dl.var.primary or error("give --var primary=URL")
local mirror = dl.var.mirror or error("give --var mirror=URL")

dl.config{ dir = "retry-out", retries = 0 }

for _, path in ipairs{ "notes.txt", "img/harbour.jpg", "docs/manual.pdf" } do
  dl.add{ url = primary .. "/" .. path, meta = { path = path } }
end

dl.on("failed", function(d, e)
  local path = d.meta and d.meta.path
  if not path then return false end            -- a mirror download: give up
  if e.status ~= 404 and e.attempt < 2 then
    return dl.retry(0.1 * e.attempt)           -- once more on the primary
  end
  dl.log("falling back to the mirror for " .. path .. " (" .. e.message .. ")")
  dl.add{ url = mirror .. "/" .. path }
  return false
end)
