-- A polite crawl: follow the links of one host from a start page, down to a
-- depth limit, the way a site owner wants to be crawled: robots.txt obeyed
-- (what it disallows is skipped, never requested, and its Crawl-delay spaces
-- the requests when longer than ours), and a delay of our own between two
-- requests to the host. The files keep the site's layout under the start
-- page's folder.
--
--   dlpipe run examples/crawl/job.lua --var start=http://127.0.0.1:8080/files/index.html --var depth=1
local start = dl.var.start or error("give the first page with --var start=URL")
local host = dl.url.parse(start).host
local folder = start:match("^(.*/)")  -- the start page's folder: nothing above it is crawled

dl.config{
  dir = "crawl-out",
  robots = true,                             -- obey /robots.txt
  max_depth = tonumber(dl.var.depth or "2"), -- links this many steps from the start page
  host_delay = 0.2,                          -- at least this long between two requests
  per_host = 2,
}

-- Where a URL goes: its path below the start page's folder.
local function place(url)
  local rel = url:sub(#folder + 1):gsub("%?.*$", "")
  if rel == "" then rel = "index.html" end
  local dir, name = rel:match("^(.*)/([^/]+)$")
  return dir or "", name or rel
end

local function visit(url)
  local dir, name = place(url)
  dl.add{ url = url, dir = dir, name = name }
end

visit(start)

dl.on("finished", function(d, f)
  if f.type ~= "text/html" then return end
  for _, link in ipairs(dl.html.links(dl.read(f.path), d.url)) do
    if dl.url.parse(link.url).host == host and link.url:sub(1, #folder) == folder then
      visit(link.url)   -- nil past max_depth, and a page linked twice is queued once
    end
  end
end)

dl.on("done", function(s)
  dl.log(string.format("%d pages and files, %d skipped (robots.txt)", s.finished + s.unchanged, s.skipped))
end)
