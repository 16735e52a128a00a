// rostrum leaderboards page: lists the configured boards (GET /v1/boards)
// and shows each board's top 10 (GET /v1/boards/{name}/top), refreshed
// every two seconds. A windows board has a window selector.
"use strict";

const boardsEl = document.getElementById("boards");
const emptyEl = document.getElementById("boards-empty");
const connEl = document.getElementById("conn");
const chosenWindow = {}; // board name → selected window
const cards = {};        // board name → {card, table, meta}

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
  boardsEl.append(c);
  cards[b.name] = { card: c, table, meta };
  return cards[b.name];
}

async function refreshBoard(b) {
  const c = card(b);
  const parts = [];
  if (b.period) parts.push("period " + b.period);
  if (b.next_reset) parts.push("next reset " + new Date(b.next_reset).toLocaleString());
  c.meta.textContent = parts.join(" · ");
  let url = "/v1/boards/" + encodeURIComponent(b.name) + "/top?n=10";
  if (chosenWindow[b.name]) url += "&window=" + encodeURIComponent(chosenWindow[b.name]);
  const tbody = c.table.tBodies[0];
  try {
    const r = await fetch(url);
    const page = await r.json();
    if (!r.ok) throw new Error(page.error || r.statusText);
    tbody.replaceChildren(...(page.members || []).map(m =>
      el("tr", {}, el("td", {}, String(m.rank)), el("td", { class: "mono" }, m.member),
        el("td", { class: "num" }, String(m.total)), el("td", { class: "muted" }, fmtTime(m.reached_at)))));
    if (!page.members || page.members.length === 0) {
      tbody.replaceChildren(el("tr", {}, el("td", { colspan: "4", class: "muted" }, "no members yet")));
    }
  } catch (e) {
    tbody.replaceChildren(el("tr", {}, el("td", { colspan: "4", class: "err" }, String(e.message || e))));
  }
}

async function refresh() {
  try {
    const r = await fetch("/v1/boards");
    if (!r.ok) throw new Error(r.statusText);
    const boards = await r.json();
    connEl.textContent = "live";
    connEl.className = "conn ok";
    emptyEl.hidden = boards.length > 0;
    await Promise.all(boards.map(refreshBoard));
  } catch (e) {
    connEl.textContent = "offline";
    connEl.className = "conn bad";
  }
}

refresh();
setInterval(refresh, 2000);
