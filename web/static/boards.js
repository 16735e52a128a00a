// rostrum leaderboards page: lists the configured boards (GET /v1/boards)
// and shows each board's top 10 (GET /v1/boards/{name}/top), refreshed
// every two seconds. A windows board has a window selector; a board that
// settles its periods shows its newest settled period (GET
// /v1/boards/{name}/settled) with a selector of the settled periods kept.
// The member lookup shows one member on every board that ranks users, each
// window of a windows board on its own row (GET /v1/members/{id}), and the
// member's hints (GET /v1/members/{id}/hints); the member stays in the
// URL (#member=ID) and is refreshed with the boards.
"use strict";

const boardsEl = document.getElementById("boards");
const emptyEl = document.getElementById("boards-empty");
const connEl = document.getElementById("conn");
const chosenWindow = {}; // board name → selected window
const cards = {};        // board name → {card, table, meta, settled}
const chosenSettled = {}; // board name → selected settled period

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

function fmtTime(ms) {
  if (!ms) return "—";
  return new Date(ms).toLocaleTimeString();
}

function card(b) {
  if (cards[b.name]) return cards[b.name];
  const meta = el("div", { class: "meta" });
  const table = el("table", {},
    el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "member"), el("th", { class: "num" }, "total"), el("th", {}, "reached"))),
    el("tbody"));
  const head = el("h2", {}, b.name + " ", el("span", { class: "muted" }, b.kind));
  const c = el("section", { class: "board", "data-board": b.name }, head, meta);
  if (b.windows && b.windows.length) {
    const sel = el("select", { "aria-label": "window" });
    for (const w of b.windows) sel.append(el("option", { value: w }, w));
    sel.addEventListener("change", () => { chosenWindow[b.name] = sel.value; refreshBoard(b); });
    c.append(sel);
  }
  c.append(table);
  let settled = null;
  if (b.settles) {
    const sel = el("select", { "aria-label": "settled period" });
    sel.addEventListener("change", () => { chosenSettled[b.name] = sel.value; refreshSettled(b); });
    const st = el("table", { class: "settled" },
      el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "member"), el("th", { class: "num" }, "total"), el("th", {}, "reached"))),
      el("tbody"));
    const info = el("div", { class: "meta" });
    c.append(el("h3", {}, "settled ", sel), info, st);
    settled = { sel, table: st, info };
  }
  boardsEl.append(c);
  cards[b.name] = { card: c, table, meta, settled };
  return cards[b.name];
}

function rows(members, empty) {
  if (!members || members.length === 0) return [el("tr", {}, el("td", { colspan: "4", class: "muted" }, empty))];
  return members.map(m =>
    el("tr", {}, el("td", {}, String(m.rank)), el("td", { class: "mono" }, m.member),
      el("td", { class: "num" }, String(m.total)), el("td", { class: "muted" }, fmtTime(m.reached_at))));
}

async function refreshSettled(b) {
  const s = cards[b.name].settled;
  if (!s) return;
  let url = "/v1/boards/" + encodeURIComponent(b.name) + "/settled?n=10";
  if (chosenSettled[b.name]) url += "&period=" + encodeURIComponent(chosenSettled[b.name]);
  const tbody = s.table.tBodies[0];
  try {
    const r = await api(url);
    const page = await r.json();
    if (r.status === 404) {
      s.info.textContent = "no settled period yet";
      tbody.replaceChildren();
      return;
    }
    if (!r.ok) throw new Error(page.detail || r.statusText);
    const have = Array.from(s.sel.options).map(o => o.value).join(",");
    if (have !== page.periods.join(",")) {
      s.sel.replaceChildren(...page.periods.map(p => el("option", { value: p }, p)));
    }
    s.sel.value = page.period;
    s.info.textContent = page.total_members + " members · closed " + new Date(page.closed_at).toLocaleString();
    tbody.replaceChildren(...rows(page.members, "nobody ranked"));
  } catch (e) {
    tbody.replaceChildren(el("tr", {}, el("td", { colspan: "4", class: "err" }, String(e.message || e))));
  }
}

async function refreshBoard(b) {
  const c = card(b);
  const parts = [];
  if (b.period) parts.push("period " + b.period);
  if (b.next_reset) parts.push("next reset " + new Date(b.next_reset).toLocaleString());
  if (b.kind === "total") parts.push("all time, never resets");
  if (b.half_life) parts.push("decays: half-life " + b.half_life);
  c.meta.textContent = parts.join(" · ");
  let url = "/v1/boards/" + encodeURIComponent(b.name) + "/top?n=10";
  if (chosenWindow[b.name]) url += "&window=" + encodeURIComponent(chosenWindow[b.name]);
  const tbody = c.table.tBodies[0];
  try {
    const r = await api(url);
    const page = await r.json();
    if (!r.ok) throw new Error(page.detail || r.statusText);
    tbody.replaceChildren(...rows(page.members, "no members yet"));
  } catch (e) {
    tbody.replaceChildren(el("tr", {}, el("td", { colspan: "4", class: "err" }, String(e.message || e))));
  }
  await refreshSettled(b);
}

// readToken is the page's ?token= (rostrum run --read-token-file), sent with
// every API read.
const readToken = new URLSearchParams(location.search).get("token");
function api(url) {
  return fetch(url, readToken ? { headers: { Authorization: "Bearer " + readToken } } : {});
}

const lookupEl = document.getElementById("lookup");
const memberInput = document.getElementById("member-id");
const memberEl = document.getElementById("member");
let lastBoards = []; // GET /v1/boards, as last read

// memberFromHash returns the member named by #member=ID, or "".
function memberFromHash() {
  const m = /^#member=(.+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : "";
}

async function refreshMember() {
  const id = memberFromHash();
  memberEl.hidden = !id;
  if (!id) return;
  const title = document.getElementById("member-title");
  const hintsEl = document.getElementById("member-hints");
  const tbody = document.getElementById("member-table").tBodies[0];
  title.textContent = id;
  const path = "/v1/members/" + encodeURIComponent(id);
  try {
    const [r, rh] = await Promise.all([api(path), api(path + "/hints")]);
    const m = await r.json();
    if (!r.ok) throw new Error(m.detail || r.statusText);
    if (memberFromHash() !== id) return; // another lookup started meanwhile
    // In the order of the board list and of each board's windows, shortest first.
    const order = new Map(lastBoards.map((b, i) => [b.name, i]));
    const windowsOf = new Map(lastBoards.map(b => [b.name, b.windows || []]));
    const names = Object.keys(m.boards).sort((a, b) => (order.get(a) ?? 1e9) - (order.get(b) ?? 1e9) || a.localeCompare(b));
    const rows = [];
    for (const name of names) {
      const b = m.boards[name];
      const cells = (label, s) => el("tr", { "data-member-board": name, "data-rank": String(s.rank) },
        el("td", {}, name), el("td", { class: "muted" }, label),
        el("td", {}, s.rank ? String(s.rank) : "—"), el("td", { class: "num" }, String(s.total)));
      if (b.windows) {
        const known = windowsOf.get(name) || [];
        const ws = Object.keys(b.windows).sort((x, y) => known.indexOf(x) - known.indexOf(y));
        for (const w of ws) rows.push(cells("window " + w, b.windows[w]));
      } else {
        rows.push(cells(b.period || "all time", b));
      }
    }
    tbody.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: "4", class: "muted" }, "no board ranks users"))]));
    tbody.dataset.member = id;
    const h = await rh.json();
    if (rh.ok) {
      hintsEl.replaceChildren(...h.hints.map(x => el("li", { "data-hint": x.name }, x.text)));
      if (h.hints.length === 0) hintsEl.replaceChildren(el("li", { class: "muted" }, "no hint holds"));
    } else {
      hintsEl.replaceChildren(el("li", { class: "muted" }, rh.status === 404 ? "no hints configured" : (h.detail || rh.statusText)));
    }
  } catch (e) {
    hintsEl.replaceChildren();
    tbody.replaceChildren(el("tr", {}, el("td", { colspan: "4", class: "err" }, String(e.message || e))));
  }
}

lookupEl.addEventListener("submit", ev => {
  ev.preventDefault();
  const id = memberInput.value.trim();
  location.hash = id ? "member=" + encodeURIComponent(id) : "";
});
window.addEventListener("hashchange", refreshMember);
memberInput.value = memberFromHash();

async function refresh() {
  try {
    const r = await api("/v1/boards");
    if (!r.ok) throw new Error(r.statusText);
    const boards = await r.json();
    lastBoards = boards;
    connEl.textContent = "live";
    connEl.className = "conn ok";
    emptyEl.hidden = boards.length > 0;
    await Promise.all([refreshMember(), ...boards.map(refreshBoard)]);
  } catch (e) {
    connEl.textContent = "offline";
    connEl.className = "conn bad";
  }
}

refresh();
setInterval(refresh, 2000);
