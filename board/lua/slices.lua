-- slices.lua: the slices of a rolling or windows board, shared by apply.lua
-- and expire.lua (each includes it with "--! include slices.lua").
--
-- Each window keeps slices of its own length, q times the board's slice
-- (q = 1 unless the window names a slice of its own): the windows of one q
-- share one set of slices. A window j counts its slices in its own length:
-- the board slice s is its slice floor(s / q), and its last subtracted
-- slice (P .. 'x' field j-1) is in those units too.
--
-- windows(a) reads ARGV's windows: "k" (k windows, all at the board's
-- slice: the layout of boards without per-window slices) or "k:q1,…,qk";
-- it returns k, q per window, and the distinct q in window order.
-- sliceset(P, q) is the zset of the slices kept q board slices long
-- (score and member: the slice index in those units); slice x's hash is
-- sliceset(P, q) .. ':' .. x (member → sum) and its ids' set that .. ':i'.

local function windows(a)
  local n, rest = string.match(a, '^(%d+):?(.*)$')
  n = tonumber(n)
  local q, gq, seen, j = {}, {}, {}, 0
  for x in string.gmatch(rest, '%d+') do j = j + 1; q[j] = tonumber(x) end
  for w = 1, n do
    q[w] = q[w] or 1
    if not seen[q[w]] then seen[q[w]] = true; gq[#gq+1] = q[w] end
  end
  return n, q, gq
end
local function sliceset(P, q)
  if q == 1 then return P .. 's' end
  return P .. 'q' .. tostring(q) .. ':s'
end
