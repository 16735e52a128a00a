-- wstate.lua: the head of a windows board's member state (packed.lua),
-- shared by apply.lua and expirew.lua (before packed.lua) and by the read
-- scripts read.lua and members.lua (each includes it with "--! include
-- wstate.lua").
--
-- The head is a 0 byte, then varints: n (the reached time and the window
-- totals: 1 + the number of windows), the signs (bit k−1 set: number k is
-- negative), and the magnitude of each number. A magnitude is below 2^53,
-- so every number is exact in Lua's doubles. The 0 byte tells it from the
-- text states of the other kinds ("total reached_at", digits first).
--
-- vgets(s, p) reads a varint of string s at p and returns it and the
-- position after it; whead(st, nwin) writes the head of state st
-- ({reached, t1, …, tk}); wstate(raw, nwin) reads it back (windows beyond
-- those written read 0) with the position after it; wshow(raw) returns
-- the state as text, "reached t1 … tk" (board/read.go parses it), or raw
-- itself when it is not a windows state.

local function vgets(str, p)
  local c = string.byte(str, p)
  local x, m = 0, 1
  while c >= 128 do
    x = x + (c - 128) * m
    m = m * 128
    p = p + 1
    c = string.byte(str, p)
  end
  return x + c * m, p + 1
end

local function whead(st, nwin)
  local out, signs = {0}, 0
  local function put(x)
    while x >= 128 do
      local r = x % 128
      out[#out + 1] = 128 + r
      x = (x - r) / 128
    end
    out[#out + 1] = x
  end
  for k = 1, nwin + 1 do
    if st[k] < 0 then signs = signs + 2 ^ (k - 1) end
  end
  put(nwin + 1)
  put(signs)
  for k = 1, nwin + 1 do put(math.abs(st[k])) end
  return string.char(unpack(out))
end

local function wstate(raw, nwin)
  if string.byte(raw, 1) ~= 0 then
    -- Not a windows state: fail before anything of this member is
    -- written.
    error('board: a windows member state without its 0 byte')
  end
  local n, p = vgets(raw, 2)
  local signs
  signs, p = vgets(raw, p)
  local st = {}
  for k = 1, n do
    local a
    a, p = vgets(raw, p)
    local bit = 2 ^ (k - 1)
    if signs % (2 * bit) >= bit then a = -a end
    st[k] = a
  end
  for k = n + 1, nwin + 1 do st[k] = 0 end
  return st, p
end

local function wshow(raw)
  if not raw then return '' end
  if string.byte(raw, 1) ~= 0 then return raw end
  local n = vgets(raw, 2)
  local st = wstate(raw, n - 1)
  local out = {}
  for k = 1, n do out[k] = string.format('%.0f', st[k]) end
  return table.concat(out, ' ')
end
