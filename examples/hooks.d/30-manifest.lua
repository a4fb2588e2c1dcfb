-- Drop-in hook: keep a manifest of every finished download beside the files, one
-- line each: the time, the SHA-256, the file (relative to the output directory)
-- and the URL, tab-separated. The job does not have to know about it.
dl.on("finished", function(d, f)
  local file = (d.dir ~= "" and d.dir .. "/" or "") .. d.name
  dl.append("manifest.tsv", table.concat({ os.date("!%Y-%m-%dT%H:%M:%SZ"), f.sha256, file, d.url }, "\t"))
end)
