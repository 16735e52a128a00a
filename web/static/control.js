// rostrum live page, recording control: the selected room's recording
// state and layout version (polled from the control API), with start and
// stop buttons. The API needs a bearer token unless rostrum runs with
// --control-insecure (as the demo does); without one the panel says so.
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const box = $('control');
  let room = null;
  let current = null; // last GET /recording answer

  function selected() {
    const t = $('room-title').textContent;
    return t && t !== 'no room selected' ? t : null;
  }

  function base() { return '/v1/rooms/' + encodeURIComponent(room); }

  async function refresh() {
    room = selected();
    box.hidden = room === null;
    if (room === null) return;
    try {
      const r = await fetch(base() + '/recording', { cache: 'no-store' });
      if (r.status === 404 && !(r.headers.get('Content-Type') || '').includes('json')) {
        // This server does not serve the control API (no such route).
        box.hidden = true;
        return;
      }
      const v = await r.json().catch(() => ({}));
      if (!r.ok) {
        show(null, r.status === 401 || r.status === 403 ? 'recording control needs a token' : (v.error || v.detail || r.statusText));
        return;
      }
      current = v;
      const l = await fetch(base() + '/layout', { cache: 'no-store' });
      $('ctl-layout').textContent = l.ok ? 'layout v' + (l.headers.get('ETag') || '').replace(/"/g, '') : 'no layout';
      show(v, null);
    } catch (e) {
      show(null, String(e));
    }
  }

  function show(v, err) {
    const rec = v && v.state === 'recording';
    $('ctl-state').textContent = err ? err : rec ? '● recording' : 'idle';
    $('ctl-state').className = rec ? 'ctl-state on' : 'ctl-state';
    $('ctl-token').textContent = v && v.token ? 'token ' + v.token + (rec ? ' · by ' + v.started_by : '') : '';
    $('ctl-start').disabled = !v || rec;
    $('ctl-stop').disabled = !v || !rec;
  }

  async function act(action) {
    const body = { by: 'live-page' };
    if (action === 'stop' && current && current.recording_id) body.recording_id = current.recording_id;
    const r = await fetch(base() + '/recording/' + action, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    const v = await r.json().catch(() => ({}));
    $('ctl-note').textContent = r.ok ? action + ' won (token ' + v.token + ')' : r.status + ': ' + (v.error || v.detail || r.statusText);
    refresh();
  }

  $('ctl-start').addEventListener('click', () => act('start'));
  $('ctl-stop').addEventListener('click', () => act('stop'));
  refresh();
  setInterval(refresh, 1000);
})();
