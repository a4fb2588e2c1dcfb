-- A sitemap crawl: read a gzipped sitemap (sitemap.xml.gz), fetch every page it
-- lists, fetch the images those pages show, and keep an index of what was found.
-- The sitemap itself is data, not a download to keep: once read it is removed,
-- and the state forgets it, so the next run reads the current one.
--
--   dlpipe run examples/sitemap/job.lua --var sitemap=https://example.org/sitemap.xml.gz
local sitemap = dl.var.sitemap or error("give the sitemap with --var sitemap=URL")
local SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"

dl.config{ dir = "sitemap-out", concurrency = 4 }

local sitemap_id = dl.add{ url = sitemap, priority = 10 }
local pages, images = {}, {}

dl.on("finished", function(d, f)
  if d.id == sitemap_id then
    local urlset = dl.xml.parse(dl.gunzip(dl.read(f.path)))
    for _, url in ipairs(urlset.children) do
      for _, field in ipairs(url.children) do
        if field.localname == "loc" and field.ns == SITEMAP_NS then
          -- <loc> is absolute in a real sitemap; resolve() keeps such a URL as it is
          dl.add{ url = dl.url.resolve(d.url, field.text), dir = "pages" }
        end
      end
    end
    dl.remove(f.path)
  elseif f.type == "text/html" then
    pages[#pages + 1] = d.url
    for _, link in ipairs(dl.html.links(dl.read(f.path), d.url)) do
      if link.tag == "img" then dl.add{ url = link.url, dir = "images" } end
    end
  else
    images[#images + 1] = { url = d.url, file = d.name, sha256 = f.sha256 }
  end
end)

dl.on("done", function(s)
  table.sort(pages)
  table.sort(images, function(a, b) return a.url < b.url end)
  dl.write("index.json", dl.json.encode({ pages = pages, images = images, failed = s.failed }))
end)
