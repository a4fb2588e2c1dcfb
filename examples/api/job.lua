-- A paginated JSON API, walked page by page. Each page lists items (an id, a
-- title, the URL of a file), and its Link header (RFC 8288, as GitHub's API and
-- many others send it) names the next page; the last page has no rel="next":
--
--   { "items": [ { "id": 101, "title": "...", "url": "../img/sunset.png" } ] }
--   Link: <page2.json>; rel="next", <page1.json>; rel="first"
--
-- Pages are data, fetched into memory (no file); items are files, in items/.
-- The cursor, the first page whose items have not all arrived, is kept in
-- dl.store, so a re-run (from cron, or after a failure) starts there instead of
-- at the first page. A run that got everything keeps the last page as the
-- cursor: the next run reads it again and goes on if it has gained a next page.
--
--   dlpipe run examples/api/job.lua --var api=https://api.example.org/items/page1.json
--
-- An API that links the next page in its body instead ({ "next": "page2.json" })
-- resolves that: dl.url.resolve(d.url, data.next). One that gives a cursor token
-- ({ "cursor": "abc" }) makes the next URL itself:
-- dl.url.resolve(d.url, "?" .. dl.url.query{ cursor = data.cursor }).
--
-- With --queue and several workers, the walk still fetches every page and item
-- once, but the tables below are each worker's own: a worker counts only the
-- pages and items it fetched itself, so the cursor may stay where it was (a
-- re-run walks those pages again, asking conditionally; nothing is skipped).
-- Run it with one worker to keep the cursor moving.
local api = dl.var.api or error("give the first page with --var api=URL")

-- Politeness towards an API that rate-limits: 0.2 s between two requests to
-- its host. A 429 or 503 with Retry-After holds back the whole host by itself.
dl.config{ dir = "api-out", concurrency = 4, retries = 5, host_delay = 0.2 }

local CURSOR = "cursor " .. api   -- one cursor per API, so --var api=another starts afresh
local start = dl.store.get(CURSOR) or api
if start ~= api then dl.log("starting at the cursor " .. start) end

local pages = {}    -- in walk order: { url =, waiting = the page's body and items not yet arrived }
local first = 1     -- pages[first] is the cursor
local page_of = {}  -- download id -> index in pages, for pages and items
local is_page = {}  -- download id -> true for a page

local function add_page(url)
  local id = dl.add{ url = url, into = "memory", priority = 10 }
  -- nil past a limit; an id seen before is a page linking back (a loop): stop there.
  if id and not page_of[id] then
    pages[#pages + 1] = { url = url, waiting = 1 }
    page_of[id], is_page[id] = #pages, true
  end
end

-- The cursor moves past a page once it and its items are all in and the page
-- after it is known.
local function advance()
  local moved = false
  while pages[first].waiting == 0 and pages[first + 1] do
    first, moved = first + 1, true
  end
  if moved then dl.store.set(CURSOR, pages[first].url) end
end

local function read_page(d, f, page)
  -- The next page first: the walk keeps ahead of the items' downloads.
  for _, link in ipairs(dl.http.links(f.headers.link, d.url)) do
    if link.rels.next then add_page(link.url) end
  end
  local data = dl.json.decode(f.body)
  for _, item in ipairs(data.items or {}) do
    if type(item.url) == "string" then
      local id = dl.add{ url = dl.url.resolve(d.url, item.url), dir = "items",
        meta = { id = item.id, title = item.title } }
      -- An item listed twice counts for the page that listed it first.
      if id and not page_of[id] then
        page_of[id] = page_of[d.id]
        page.waiting = page.waiting + 1
      end
    else
      dl.warn("an item without a url on " .. d.url)
    end
  end
end

dl.on("finished", function(d, f)
  local page = pages[page_of[d.id]]
  if not page then return end
  if is_page[d.id] then
    read_page(d, f, page)
  else
    dl.log((f.unchanged and "kept " or "saved ") .. tostring(d.meta.title) .. " (" .. tostring(d.meta.id) .. ")")
  end
  page.waiting = page.waiting - 1
  advance()
end)

dl.on("failed", function(d, e)
  if is_page[d.id] then dl.log("page " .. d.url .. " failed: " .. e.message) end
end)

dl.on("done", function(s)
  dl.log("the next run starts at " .. pages[first].url)
end)

add_page(start)
