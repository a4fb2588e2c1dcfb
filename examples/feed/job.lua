-- A cron-friendly feed fetcher: read an RSS feed, download every enclosure into
-- a folder named after the feed, and report what was new. Run it from cron:
--
--   */30 * * * * dlpipe run /path/to/feed/job.lua --var feed=https://example.org/feed.xml -q
--
-- Downloads of the same URL into the same file are queued once per run.
local feed = dl.var.feed or error("give the feed with --var feed=URL")

dl.config{ dir = "feed-out", concurrency = 2, retries = 5, timeout = 60 }

local feed_id = dl.add{ url = feed, name = "feed.xml", priority = 10 }
local titles = {}

dl.on("finished", function(d, f)
  if d.id ~= feed_id then
    dl.log("saved " .. (titles[d.url] or d.url))
    return
  end
  local rss = dl.xml.parse(dl.read(f.path))
  for _, channel in ipairs(rss.children) do
    for _, item in ipairs(channel.children) do
      if item.name == "item" then
        local title, url = "untitled", nil
        for _, field in ipairs(item.children) do
          if field.name == "title" then title = field.text end
          if field.name == "enclosure" then url = field.attrs.url end
        end
        if url then
          url = dl.url.resolve(d.url, url)
          titles[url] = title
          dl.add{ url = url, dir = "episodes", meta = { title = title } }
        end
      end
    end
  end
end)

dl.on("done", function(s)
  if s.failed > 0 then
    dl.log(s.failed .. " enclosure(s) failed; the next run tries them again")
  end
end)
