-- A site mirror: start at the index page, follow links on the same host down
-- to a depth limit, and keep the site's directory layout.
--
--   dlpipe run examples/mirror/job.lua --var base=http://127.0.0.1:8080/files --var depth=2
local base = dl.var.base or error("give the site with --var base=URL")
local max_depth = tonumber(dl.var.depth or "2")
local host = dl.url.parse(base).host
local prefix = dl.url.parse(base).path

dl.config{ dir = "mirror-out", concurrency = 4, per_host = 4 }

local depth = {}

-- Where a URL goes: its path under the base, so the mirror keeps the layout.
local function place(url)
  local path = dl.url.parse(url).path
  local rel = path:sub(#prefix + 2)
  if rel == "" then rel = "index.html" end
  local dir, name = rel:match("^(.*)/([^/]+)$")
  return dir or "", name or rel
end

local function visit(url, level)
  local dir, name = place(url)
  local id = dl.add{ url = url, dir = dir, name = name, meta = { depth = level } }
  depth[id] = level
end

visit(base .. "/index.html", 0)

dl.on("finished", function(d, f)
  if f.type ~= "text/html" then return end
  local level = d.meta and d.meta.depth or 0
  if level >= max_depth then return end
  for href in dl.read(f.path):gmatch('href="([^"]+)"') do
    local url = dl.url.resolve(d.url, href)
    local parts = url and dl.url.parse(url)
    if parts and parts.host == host and parts.path:sub(1, #prefix) == prefix then
      local clean = url:gsub("#.*$", "")
      visit(clean, level + 1)
    end
  end
end)
