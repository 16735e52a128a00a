// rostrum live page: the room list, and for the selected room its stable
// tiles, raw top list, the processor counters and the operations panel
// (sparklines, DLQ reasons, lag by partition), all pushed by the server as
// Server-Sent Events on /v1/events?room=ID&rooms=1. The server reads Redis
// once per interval for every viewer.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const num = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

  const state = {
    room: null,   // selected room id
    es: null,     // the open EventSource
    tiles: [],    // tile elements, one per slot
    rooms: [],    // last rooms event
    roomItems: new Map(), // room id → its <li>, kept across updates (focus stays put)
    series: { events: [], lag_records: [], lag_seconds: [], dlq: [] }, // sparkline points
    seriesMax: 240,
    mode: 'published', // tiles show the published list, or the merge
    last: null,   // last room event
    // Visible changes of both lists, as [time ms, count] pairs, for the
    // changes-per-minute figures beside the switch.
    changes: { published: [], merge: [] },
    prev: { published: null, merge: null },
  };

  const ICONS = {
    mic: '<svg viewBox="0 0 24 24" aria-hidden="true"><rect x="9" y="3" width="6" height="11" rx="3"/>' +
      '<path d="M6 11a6 6 0 0 0 12 0M12 17v4" fill="none" stroke-width="2" stroke-linecap="round"/>' +
      '<path class="slash" d="M4 4l16 16" stroke-width="2.4" stroke-linecap="round"/></svg>',
    cam: '<svg viewBox="0 0 24 24" aria-hidden="true"><rect x="2.5" y="7" width="13" height="10" rx="2"/>' +
      '<path d="M16 10.5l5.5-3v9l-5.5-3z"/>' +
      '<path class="slash" d="M4 4l16 16" stroke-width="2.4" stroke-linecap="round"/></svg>',
    share: '<svg viewBox="0 0 24 24" aria-hidden="true"><rect x="2.5" y="4" width="19" height="13" rx="2"/>' +
      '<path d="M8 21h8M12 17v4" fill="none" stroke-width="2" stroke-linecap="round"/></svg>',
    spot: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M12 2l2.9 6.3 6.9.7-5.2 4.6 1.5 6.8L12 17l-6.1 3.4 1.5-6.8L2.2 9l6.9-.7z"/></svg>',
  };

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // A stable colour per user, so a tile that changes hands is easy to spot.
  function hue(s) {
    let h = 0;
    for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
    return h % 360;
  }

  function initials(user) {
    const parts = user.split(/[^A-Za-z0-9]+/).filter(Boolean);
    const s = parts.length > 1 ? parts[0][0] + parts[parts.length - 1][0] : user.slice(0, 2);
    return s.toUpperCase();
  }

  function clock(ms) {
    const d = new Date(ms);
    const p = (n, w) => String(n).padStart(w, '0');
    return `${p(d.getHours(), 2)}:${p(d.getMinutes(), 2)}:${p(d.getSeconds(), 2)}.${p(d.getMilliseconds(), 3)}`;
  }

  // ── room list ─────────────────────────────────────────────────────────

  // The list is updated in place: a room keeps its <li> and button while it
  // is listed, only its text changes, and a focused button keeps the focus
  // when the order changes.
  function renderRooms(rooms) {
    state.rooms = rooms;
    const ul = $('rooms');
    const focused = document.activeElement;
    const seen = new Set();
    rooms.forEach((r, i) => {
      seen.add(r.room_id);
      let li = state.roomItems.get(r.room_id);
      if (!li) {
        li = el('li');
        const b = el('button', 'room-btn');
        b.type = 'button';
        b.dataset.room = r.room_id;
        b.append(el('span', 'room-id', r.room_id), el('span', 'room-sub'));
        b.addEventListener('click', () => { location.hash = encodeURIComponent(r.room_id); });
        li.append(b);
        state.roomItems.set(r.room_id, li);
      }
      const b = li.firstChild;
      b.classList.toggle('selected', r.room_id === state.room);
      if (r.room_id === state.room) b.setAttribute('aria-current', 'true'); else b.removeAttribute('aria-current');
      const sub = `${num.format(r.total_members)} ranked · seq ${num.format(r.seq)}`;
      const subEl = b.querySelector('.room-sub');
      if (subEl.textContent !== sub) subEl.textContent = sub;
      if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null);
    });
    for (const [id, li] of state.roomItems) {
      if (!seen.has(id)) { li.remove(); state.roomItems.delete(id); }
    }
    if (focused && ul.contains(focused) && document.activeElement !== focused) focused.focus({ preventScroll: true });
    filterRooms();
    $('room-count').textContent = rooms.length ? String(rooms.length) : '';
    $('rooms-empty').hidden = rooms.length > 0;
    if (state.room === null && rooms.length > 0) {
      history.replaceState(null, '', '#' + encodeURIComponent(rooms[0].room_id));
      select(rooms[0].room_id);
    }
  }

  function filterRooms() {
    const q = $('room-search').value.trim().toLowerCase();
    for (const [id, li] of state.roomItems) li.hidden = q !== '' && !id.toLowerCase().includes(q);
  }

  function announce(text) {
    $('announce').textContent = text;
  }

  // ── selected room ─────────────────────────────────────────────────────

  function roomFromHash() {
    const h = location.hash.slice(1);
    if (!h) return null;
    try { return decodeURIComponent(h); } catch (e) { return null; }
  }

  function select(room) {
    if (room === state.room) return;
    state.room = room;
    for (const b of document.querySelectorAll('.room-btn')) {
      b.classList.toggle('selected', b.dataset.room === room);
      if (b.dataset.room === room) b.setAttribute('aria-current', 'true'); else b.removeAttribute('aria-current');
    }
    $('room-title').textContent = room || 'no room selected';
    if (room) announce(`room ${room} selected`);
    state.last = null;
    state.changes = { published: [], merge: [] };
    state.prev = { published: null, merge: null };
    renderRates();
    $('room-meta').textContent = '';
    state.tiles = [];
    $('stable').replaceChildren();
    $('stable-empty').hidden = true;
    $('raw').tBodies[0].replaceChildren();
    connect();
  }

  function connect() {
    if (state.es) state.es.close();
    // A page opened as /?token=T (rostrum run --read-token-file) hands its
    // read token on: an EventSource cannot send an Authorization header.
    const token = new URLSearchParams(location.search).get('token');
    const url = '/v1/events?rooms=1' + (state.room ? '&room=' + encodeURIComponent(state.room) : '') +
      (token ? '&token=' + encodeURIComponent(token) : '');
    const es = new EventSource(url);
    state.es = es;
    setConn('connecting', '');
    es.onopen = () => setConn('live', 'ok');
    es.onerror = () => {
      setConn('reconnecting', 'bad');
      // A refused stream (429 or 503: over the server's stream limits) is
      // closed for good by EventSource; try again after a while.
      if (es.readyState === EventSource.CLOSED) {
        setTimeout(() => { if (state.es === es) connect(); }, 5000);
      }
    };
    es.addEventListener('rooms', (e) => renderRooms(JSON.parse(e.data)));
    es.addEventListener('series', (e) => renderSeries(JSON.parse(e.data)));
    es.addEventListener('room', (e) => renderRoom(JSON.parse(e.data)));
    es.addEventListener('missing', () => {
      $('room-meta').textContent = 'no state in Redis (unknown or expired room)';
      renderRoom({ room_id: state.room, seq: 0, total_members: 0, stable: [], raw: [] }, true);
    });
    es.addEventListener('unavailable', (e) => {
      $('room-meta').textContent = 'read failed: ' + JSON.parse(e.data).detail;
    });
    es.addEventListener('counters', (e) => renderCounters(JSON.parse(e.data)));
  }

  function setConn(text, cls) {
    const c = $('conn');
    if (c.textContent !== text && (cls === 'bad' || c.className.includes('bad'))) announce(`connection ${text}`);
    c.textContent = text;
    c.className = 'conn ' + cls;
  }

  function renderRoom(v, keepMeta) {
    if (v.room_id !== state.room) return;
    if (!keepMeta) {
      $('room-meta').textContent = `${num.format(v.total_members)} ranked · seq ${num.format(v.seq)}`;
    }
    if (v.strategy) $('strategy').textContent = v.strategy;
    state.last = v;
    count('published', v.stable);
    count('merge', v.merge || []);
    renderRates();
    const shown = shownList(v);
    renderStable(shown);
    renderRaw(v.raw, shown);
  }

  function shownList(v) {
    return state.mode === 'merge' ? (v.merge || []) : v.stable;
  }

  // Visible changes from the previous list: tiles replaced plus tiles moved,
  // as the flicker benchmark counts them.
  function count(which, list) {
    const ids = list.map((m) => m.user_id);
    const prev = state.prev[which];
    state.prev[which] = ids;
    if (prev === null) return;
    let entered = 0, moved = 0;
    ids.forEach((id, i) => {
      const j = prev.indexOf(id);
      if (j < 0) entered++;
      else if (j !== i) moved++;
    });
    const left = prev.filter((id) => !ids.includes(id)).length;
    const n = Math.max(entered, left) + moved;
    if (n > 0) state.changes[which].push([Date.now(), n]);
  }

  function renderRates() {
    const since = Date.now() - 60000;
    for (const which of ['published', 'merge']) {
      const c = state.changes[which].filter(([t]) => t >= since);
      state.changes[which] = c;
      const n = c.reduce((a, [, k]) => a + k, 0);
      document.querySelector(`.rate[data-k="${which}"]`).textContent = `${num.format(n)} changes/min`;
    }
  }

  function setMode(mode) {
    state.mode = mode;
    $('stable').dataset.mode = mode;
    $('mode-published').setAttribute('aria-pressed', String(mode === 'published'));
    $('mode-merge').setAttribute('aria-pressed', String(mode === 'merge'));
    // Start the tiles afresh: switching lists is not a change of the room.
    state.tiles = [];
    $('stable').replaceChildren();
    if (state.last) renderRoom(state.last, true);
  }

  // Tiles are keyed by slot: a tile stays where it is and only its content
  // changes, as on a layout service's screen. A slot that changes hands
  // flashes. A tile's class stays exactly "tile"; its states are data-
  // attributes (data-changed, data-speaking, data-empty).
  function renderStable(stable) {
    const grid = $('stable');
    while (state.tiles.length > stable.length) state.tiles.pop().remove();
    while (state.tiles.length < stable.length) {
      const t = newTile(state.tiles.length);
      state.tiles.push(t);
      grid.append(t);
    }
    stable.forEach((m, i) => fillTile(state.tiles[i], m));
    $('stable-empty').hidden = stable.length > 0;
  }

  function newTile(slot) {
    const t = el('div', 'tile');
    t.dataset.slot = String(slot);
    t.dataset.user = '';
    const head = el('div', 'tile-head');
    head.append(el('span', 'slot', `#${slot + 1}`), el('span', 'role'));
    const media = el('div', 'media');
    const mic = el('span', 'icon mic');
    mic.setAttribute('role', 'img');
    mic.innerHTML = ICONS.mic;
    const cam = el('span', 'icon cam');
    cam.setAttribute('role', 'img');
    cam.innerHTML = ICONS.cam;
    // Shown only while on: a presenter's screen share, the spotlight.
    const share = el('span', 'icon share flag');
    share.setAttribute('role', 'img');
    share.innerHTML = ICONS.share;
    const spot = el('span', 'icon spot flag');
    spot.setAttribute('role', 'img');
    spot.innerHTML = ICONS.spot;
    media.append(mic, cam, share, spot);
    const vol = el('div', 'vol');
    const track = el('div', 'vol-track');
    track.append(el('div', 'vol-fill'));
    vol.append(track, el('span', 'vol-num'));
    t.append(head, el('div', 'avatar'), el('div', 'name'), media, vol);
    t.addEventListener('animationend', () => t.removeAttribute('data-changed'));
    return t;
  }

  function fillTile(t, m) {
    const user = m.user_id || '';
    if (t.dataset.user !== user) {
      if (t.dataset.user !== '') {
        t.removeAttribute('data-changed');
        void t.offsetWidth; // restart the animation
        t.setAttribute('data-changed', '');
      }
      t.dataset.user = user;
      const av = t.querySelector('.avatar');
      av.textContent = user ? initials(user) : '';
      av.style.setProperty('--h', String(hue(user)));
      t.querySelector('.name').textContent = user || 'empty';
      t.querySelector('.name').title = user;
    }
    t.toggleAttribute('data-empty', !user);
    t.toggleAttribute('data-speaking', m.audio === 1 && m.volume > 0);
    const role = t.querySelector('.role');
    role.textContent = m.role || '';
    role.className = 'role role-' + (m.role || 'none');
    setIcon(t.querySelector('.mic'), m.audio === 1, 'microphone');
    setIcon(t.querySelector('.cam'), m.video === 1, 'camera');
    setIcon(t.querySelector('.share'), m.screen_share === 1, 'screen share');
    setIcon(t.querySelector('.spot'), m.spotlight === 1, 'spotlight');
    t.toggleAttribute('data-sharing', m.screen_share === 1);
    t.toggleAttribute('data-spotlight', m.spotlight === 1);
    const pct = Math.min(100, (m.volume || 0) / 9.99);
    t.querySelector('.vol-fill').style.width = pct.toFixed(1) + '%';
    t.querySelector('.vol-num').textContent = String(m.volume || 0);
    t.title = `${user} · ${m.role} · score ${m.score}`;
    t.setAttribute('aria-label', `slot ${Number(t.dataset.slot) + 1}: ${user || 'empty'}` + (user ? `, ${m.role}` : ''));
  }

  function setIcon(icon, on, what) {
    icon.classList.toggle('on', on);
    icon.classList.toggle('off', !on);
    const label = `${what} ${on ? 'on' : 'off'}`;
    icon.title = label;
    if (icon.getAttribute('aria-label') !== label) icon.setAttribute('aria-label', label);
  }

  function renderRaw(raw, stable) {
    const slots = new Map(stable.map((m, i) => [m.user_id, i + 1]));
    const rows = raw.map((m, i) => {
      const tr = el('tr');
      tr.dataset.user = m.user_id;
      const slot = slots.get(m.user_id);
      if (slot === undefined) tr.className = 'unslotted';
      const onoff = (v) => {
        const td = el('td', v === 1 ? 'on' : 'off', v === 1 ? 'on' : 'off');
        return td;
      };
      const role = el('td');
      role.append(el('span', 'role role-' + m.role, m.role));
      tr.append(
        el('td', 'num muted', String(i + 1)),
        el('td', 'user', m.user_id),
        el('td', 'num', slot === undefined ? '–' : String(slot)),
        onoff(m.audio),
        el('td', 'num', String(m.volume)),
        onoff(m.video),
        role,
        scoreCell(m),
      );
      return tr;
    });
    $('raw').tBodies[0].replaceChildren(...rows);
  }

  function scoreCell(m) {
    const td = el('td', 'num mono', String(m.score));
    td.append(el('span', 'sub', clock(m.ts)));
    return td;
  }

    function renderCounters(c) {
    const set = (k, text) => { $('counters').querySelector(`[data-k="${k}"]`).textContent = text; };
    set('rate', c.events_per_second == null ? '—' : num.format(c.events_per_second));
    set('dlq', num.format(c.dlq));
    set('ignored', num.format(c.ignored || 0));
    set('lag', `${num.format(c.lag_records)} rec · ${c.lag_seconds.toFixed(1)} s`);
    set('published', num.format(c.published));
    push({ at: c.at, events_per_second: c.events_per_second, dlq_per_second: c.dlq_per_second,
      lag_records: c.lag_records, lag_seconds: c.lag_seconds });
    drawSparks();
    renderReasons(c.dlq_by_reason || {});
    renderPartitions(c.partitions || []);
  }

  // ── operations panel ─────────────────────────────────────────────────

  function push(p) {
    const s = state.series;
    const add = (k, v) => {
      if (v == null) return;
      s[k].push([p.at, v]);
      if (s[k].length > state.seriesMax) s[k].shift();
    };
    add('events', p.events_per_second);
    add('lag_records', p.lag_records);
    add('lag_seconds', p.lag_seconds);
    add('dlq', p.dlq_per_second);
  }

  // The server's recent samples, sent first on every stream.
  function renderSeries(v) {
    state.series = { events: [], lag_records: [], lag_seconds: [], dlq: [] };
    for (const p of v.points || []) push(p);
    drawSparks();
  }

  function drawSparks() {
    for (const fig of document.querySelectorAll('.spark')) {
      const pts = state.series[fig.dataset.s];
      const line = fig.querySelector('polyline');
      const now = fig.querySelector('.spark-now');
      if (pts.length === 0) { line.setAttribute('points', ''); continue; }
      const t0 = pts[0][0], t1 = Math.max(pts[pts.length - 1][0], t0 + 1);
      const hi = Math.max(1e-9, ...pts.map(([, v]) => v));
      line.setAttribute('points', pts.map(([t, v]) =>
        `${((t - t0) / (t1 - t0) * 200).toFixed(1)},${(38 - v / hi * 36).toFixed(1)}`).join(' '));
      const last = pts[pts.length - 1][1];
      now.textContent = fig.dataset.s === 'lag_seconds' ? last.toFixed(1) : num.format(last);
    }
  }

  function renderReasons(byReason) {
    const rows = Object.entries(byReason).sort((a, b) => b[1] - a[1]).map(([r, n]) => {
      const tr = el('tr');
      tr.dataset.reason = r;
      tr.append(el('td', 'mono', r), el('td', 'num', num.format(n)));
      return tr;
    });
    $('dlq-reasons').tBodies[0].replaceChildren(...rows);
    $('dlq-none').hidden = rows.length > 0;
  }

  function renderPartitions(parts) {
    const rows = parts.map((p) => {
      const tr = el('tr');
      tr.dataset.partition = `${p.topic}/${p.partition}`;
      tr.append(el('td', 'mono', p.topic), el('td', 'num', String(p.partition)),
        el('td', 'num', num.format(p.lag_records)), el('td', 'num', p.lag_seconds.toFixed(1)));
      return tr;
    });
    $('partitions').tBodies[0].replaceChildren(...rows);
    $('partitions-none').hidden = rows.length > 0;
  }

  // ── start ─────────────────────────────────────────────────────────────

  $('mode-published').addEventListener('click', () => setMode('published'));
  $('mode-merge').addEventListener('click', () => setMode('merge'));
  $('room-search').addEventListener('input', filterRooms);
  window.addEventListener('hashchange', () => select(roomFromHash()));
  const first = roomFromHash();
  if (first !== null) {
    select(first);
  } else {
    connect(); // the room list and counters until a room is picked
  }
  setInterval(renderRates, 1000);
})();
