-- luacheck settings for rostrum's Redis scripts (sink/lua, board/lua, control/lua); `make
-- lint` runs luacheck over every .lua file from the repository root.

-- Redis runs scripts in Lua 5.1 with these libraries as globals.
std = "lua51"
read_globals = { "redis", "KEYS", "ARGV", "cjson", "cmsgpack", "bit", "struct" }

-- The scripts keep long conditions on one line, as the Go code does.
max_line_length = false

-- Shared Lua: a script names a file of its directory with "--! include FILE"
-- and the loader (internal/redisscript) puts FILE in place of that line. So
-- the top-level locals of an included file are read by its includers, which
-- luacheck sees as globals, and may go unused in the file itself. Both are
-- allowed here, per file, from the include lines themselves.
local ok, lfs = pcall(require, "lfs") -- LuaFileSystem, a luacheck dependency
if not ok then error("luacheck settings: LuaFileSystem (lfs) is needed to read the include lines") end

local function lines(path)
  local f = io.open(path)
  if not f then return {} end
  local out = {}
  for l in f:lines() do out[#out + 1] = l end
  f:close()
  return out
end

-- the names of an included file's top-level locals
local function defined(path)
  local names = {}
  for _, l in ipairs(lines(path)) do
    local fn = l:match("^local%s+function%s+([%w_]+)")
    local vars = l:match("^local%s+([%w_,%s]+)=")
    if fn then
      names[#names + 1] = fn
    elseif vars then
      for v in vars:gmatch("[%w_]+") do names[#names + 1] = v end
    end
  end
  return names
end

for _, dir in ipairs({ "sink/lua", "board/lua", "control/lua" }) do
  if lfs.attributes(dir, "mode") == "directory" then
    for name in lfs.dir(dir) do
      if name:match("%.lua$") then
        local globals = {}
        for _, l in ipairs(lines(dir .. "/" .. name)) do
          local inc = l:match("^%-%-! include%s+(%S+)%s*$")
          if inc then
            local names = defined(dir .. "/" .. inc)
            local unused = {}
            for _, n in ipairs(names) do
              globals[#globals + 1] = n
              unused[#unused + 1] = "211/" .. n
            end
            files[dir .. "/" .. inc] = { ignore = unused }
          end
        end
        if #globals > 0 then
          files[dir .. "/" .. name] = { read_globals = globals }
        end
      end
    end
  end
end
