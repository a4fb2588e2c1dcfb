-- Drop-in hook: log each finished download as one JSON object.
local function quote(s)
  return '"' .. tostring(s):gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

dl.on("finished", function(d, f)
  dl.log(string.format('{"id":%d,"url":%s,"bytes":%d,"type":%s}',
    d.id, quote(d.url), f.bytes, quote(f.type)))
end)
