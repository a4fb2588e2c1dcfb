-- An image gallery: fetch a page, download every linked image, skip anything
-- that is not an image (decided from the response, before a byte is written),
-- and name each file by its content hash so duplicates collapse into one file.
--
--   dlpipe run examples/gallery/job.lua --var base=http://127.0.0.1:8080/files
local base = dl.var.base or error("give the site with --var base=URL")

dl.config{ dir = "gallery-out", concurrency = 4 }

local page = dl.add{ url = base .. "/gallery.html", name = "gallery.html" }
local seen = {}

dl.on("response", function(d, r)
  if d.id == page then return end
  if not r.type:match("^image/") then
    return dl.skip("not an image: " .. r.type)
  end
end)

dl.on("finished", function(d, f)
  if d.id == page then
    for href in dl.read(f.path):gmatch('href="([^"]+)"') do
      local url = dl.url.resolve(d.url, href)
      if url and not url:match("%.html$") then dl.add(url) end
    end
    return
  end
  local ext = f.path:match("%.(%w+)$") or "bin"
  local name = f.sha256:sub(1, 16) .. "." .. ext
  if seen[name] then
    dl.log("duplicate of " .. seen[name] .. ": " .. d.url)
  end
  seen[name] = seen[name] or d.url
  d.dir = "images"
  d.name = name
end)

dl.on("done", function(s)
  dl.log(string.format("%d images, %d skipped", s.finished - 1, s.skipped))
end)
