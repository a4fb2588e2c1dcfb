-- A verified mirror of a release folder: every file its SHA256SUMS lists,
-- checked while it streams and again on every re-run (`verify`): a file that
-- rotted or was edited on disk is fetched again and replaces it, even where
-- the server would answer 304. Files the list no longer names are removed.
-- index.tsv records each file's final path and digest, written from `placed`,
-- which runs after every `finished` handler (a sorting hook's move included).
--
--   dlpipe run examples/verified/job.lua --var base=http://127.0.0.1:8080/files/release
local base = dl.var.base or error("give the release folder with --var base=URL")

dl.config{ dir = "verified-out", verify = true }

-- The list itself is read in memory: it is not part of the mirror.
dl.add{ url = base .. "/SHA256SUMS", into = "memory", meta = { list = true } }

dl.on("finished", function(d, f)
  if not (d.meta and d.meta.list) then return end
  local wanted = {}
  -- sha256sum's lines: the digest, two spaces (or " *" for binary), the name.
  for digest, name in f.body:gmatch("(%x+) [ *]([^\r\n]+)") do
    name = dl.safename(name)
    if name and #digest == 64 then
      wanted[name] = true
      dl.add{ url = base .. "/" .. dl.url.encode(name), dir = "files", name = name, sha256 = digest }
    end
  end
  local ok, entries = pcall(dl.list, "files")  -- no folder yet on the first run
  for _, entry in ipairs(ok and entries or {}) do
    if entry.type == "file" and not wanted[entry.name] then
      dl.log("no longer listed: " .. entry.name)
      dl.remove("files/" .. entry.name)
    end
  end
end)

-- Where each file ended up, whoever moved it last.
local rows = {}
dl.on("placed", function(d, f)
  if f.path == nil then return end  -- the list, in memory
  local where = d.dir ~= "" and d.dir .. "/" .. d.name or d.name
  rows[#rows + 1] = where .. "\t" .. f.sha256 .. "\t" .. f.bytes
end)

dl.on("done", function(s)
  -- s.verified: kept files hashed again; s.replaced: those that came again.
  dl.log(string.format("%d kept files checked, %d replaced", s.verified, s.replaced))
  table.sort(rows)
  dl.write("index.tsv", table.concat(rows, "\n") .. (#rows > 0 and "\n" or ""))
end)
