-- Drop-in hook: sort finished files into folders by media type
-- (images/, documents/, audio/, other/), unless a job already placed them.
local folders = {
  ["image/"] = "images", ["audio/"] = "audio",
  ["application/pdf"] = "documents", ["text/plain"] = "documents",
}

dl.on("finished", function(d, f)
  if d.dir ~= "" then return end               -- the job chose a folder: keep it
  if f.type == "text/html" then return end     -- pages stay where links expect them
  for prefix, folder in pairs(folders) do
    if f.type:sub(1, #prefix) == prefix then d.dir = folder return end
  end
  d.dir = "other"
end)
