// The dashboard's page: one event stream per tab, fed by the server's shared watches; the
// page is redrawn from each message. No framework, no build step.
'use strict';
const token = location.pathname.split('/')[1];
let stream = null;
let pending = null; // the action the confirmation dialog is about

// h builds an element: h('td', {class: 'x'}, child, 'text', …). Text goes through
// textContent, never HTML.
function h(tag, attrs, ...kids) {
  const svg = ['svg', 'line', 'circle', 'polyline', 'text', 'title'].includes(tag);
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v); else el.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) el.append(k instanceof Node ? k : String(k));
  return el;
}
const $ = (id) => document.getElementById(id);
const phase = (p, id) => h('span', {class: 'phase ' + (p || ''), id}, p || 'Unknown');
const api = (p) => p; // relative to /TOKEN/

function follow(url, render) {
  if (stream) stream.close();
  stream = new EventSource(url);
  stream.onopen = () => { $('conn').textContent = 'live'; $('conn').className = 'conn live'; };
  stream.onerror = () => { $('conn').textContent = 'reconnecting…'; $('conn').className = 'conn'; };
  stream.onmessage = (e) => {
    const page = JSON.parse(e.data);
    if (page.error) { showErrors([page.error]); return; }
    showErrors(page.errors || []);
    $('readonly').hidden = !page.readOnly;
    render(page);
  };
}

function showErrors(errs) {
  $('errors').replaceChildren(...errs.map((e) => h('li', {}, e)));
}

function route() {
  const parts = (location.hash.replace(/^#\/?/, '') || '').split('/').map(decodeURIComponent);
  $('result').hidden = true;
  if (parts[0] === 'release' && parts.length === 4) {
    const [, kind, ns, name] = parts;
    const q = new URLSearchParams({view: 'release', kind, namespace: ns, name});
    follow(api('api/stream?' + q), renderRelease);
  } else {
    follow(api('api/stream?view=list'), renderList);
  }
}

function link(kind, ns, name) {
  return '#/release/' + [kind, ns, name].map(encodeURIComponent).join('/');
}

function renderList(page) {
  $('scope').textContent = page.scope;
  const rows = page.rows.map((r) => h('tr', {'data-name': r.name, 'data-kind': r.kind},
    h('td', {}, r.namespace), h('td', {}, r.kind),
    h('td', {}, h('a', {href: link(r.kind, r.namespace, r.name)}, r.name)),
    h('td', {}, phase(r.phase)), h('td', {class: 'summary'}, r.summary),
    h('td', {}, r.releasedBy ? h('a', {href: link('canary', r.namespace, r.releasedBy)}, 'canary/' + r.releasedBy) : '')));
  $('main').replaceChildren(h('section', {},
    h('h2', {}, 'Workloads'),
    rows.length ? h('table', {id: 'workloads'},
      h('tr', {}, ['Namespace', 'Kind', 'Name', 'Phase', 'Where it stands', 'Released by'].map((t) => h('th', {}, t))), rows)
      : h('p', {}, 'No TApp, UnitedDeployment or Canary here.')));
}

function renderRelease(p) {
  const sections = [
    h('section', {id: 'head'},
      h('h2', {}, p.kind + '/' + p.name, ' ', phase(p.phase, 'phase')),
      h('div', {class: 'small'}, 'namespace ' + p.namespace),
      h('p', {class: 'summary', id: 'summary'}, p.summary || ''),
      h('div', {class: 'actions'}, (p.actions || []).map((b) => h('button', {
        'data-action': b.action, disabled: !b.enabled, title: b.why || ('kubectl workload ' + b.label + ' ' + b.target),
        onclick: () => preview(p, b)}, b.label)))),
  ];
  if (p.steps.length) sections.push(h('section', {id: 'steps'}, h('h3', {}, 'Steps'), timeline(p)));
  if (p.traffic) sections.push(h('section', {id: 'traffic'}, h('h3', {}, 'Traffic to the canary'), traffic(p.traffic)));
  sections.push(h('section', {id: 'pods'}, h('h3', {}, 'Pods per revision'),
    p.groups.length ? p.groups.map(group) : h('p', {class: 'small'}, 'No pods.')));
  if (p.checks.length) sections.push(h('section', {id: 'analysis'}, h('h3', {}, 'Analysis'), p.checks.map(check)));
  sections.push(h('section', {id: 'events'}, h('h3', {}, 'Events'), events(p.events)));
  $('scope').textContent = 'namespace ' + p.namespace;
  $('main').replaceChildren(...sections);
  tick();
}

function timeline(p) {
  return h('ol', {class: 'steps'}, p.steps.map((s) => h('li', {class: 'step ' + s.where, 'data-index': s.index, 'data-state': s.state},
    h('div', {class: 'state'}, 'Step ' + s.index + ' · ' + s.state),
    h('div', {}, s.replicas + ' canary pod' + (s.replicas === 1 ? '' : 's') + (s.weight != null ? ', weight ' + s.weight + '%' : '')),
    s.pause ? h('div', {class: 'small'}, 'pause ' + s.pause) : null,
    s.where === 'current' && s.pauseEndTime ? h('div', {class: 'small countdown', 'data-end': s.pauseEndTime}) : null,
    s.analysis.length ? h('div', {class: 'small'}, 'analysis: ' + s.analysis.join(', ')) : null)));
}

// tick updates the remaining pause of the current step every second, from the end time the
// status recorded: a local clock, not a request.
function tick() {
  for (const el of document.querySelectorAll('.countdown')) {
    const left = Math.max(0, Math.round((new Date(el.dataset.end) - Date.now()) / 1000));
    el.textContent = left > 0 ? 'pause ends in ' + left + ' s' : 'pause over';
  }
}
setInterval(tick, 1000);

function traffic(t) {
  const bar = (label, w) => {
    const fill = h('div', {}); fill.style.width = w + '%';
    return h('div', {}, h('div', {class: 'small'}, label + ': ' + w + '%'), h('div', {class: 'bar'}, fill));
  };
  return h('div', {'data-actual': t.actual}, bar('desired', t.desired), bar('actual (HTTPRoute)', t.actual),
    t.headerRoute ? h('div', {class: 'small'}, 'header route: ' + t.headerRoute) : null);
}

function group(g) {
  const ready = g.pods.filter((x) => x.ready).length;
  return h('div', {class: 'group'},
    h('div', {}, h('b', {}, g.title), ' ', h('span', {class: 'small'}, [g.status, g.info, ready + '/' + g.pods.length + ' ready'].filter(Boolean).join(' · '))),
    h('div', {class: 'pods'}, g.pods.map((x) => h('div', {
      class: 'pod ' + x.status + (x.ready ? ' ready' : '') + (/Err|BackOff|Fail/.test(x.status) ? ' bad' : ''),
      title: x.name + ': ' + x.status + (x.ready ? ', ready' : '')}))));
}

// chart draws a check's numeric values over time with its thresholds: green points passed,
// red failed, grey otherwise; dashed lines are the success (green) and failure (red) bounds.
function chart(c) {
  const W = 360, H = 120, P = 28;
  const pts = c.points.filter((x) => x.v !== null && x.v !== undefined);
  const svg = h('svg', {class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`, 'data-points': pts.length});
  if (!pts.length) { svg.append(h('text', {x: 10, y: H / 2, 'font-size': 12}, 'no numeric value yet')); return svg; }
  const vals = pts.map((x) => x.v).concat(c.thresholds.map((t) => t.value));
  let lo = Math.min(...vals), hi = Math.max(...vals);
  if (lo === hi) { lo -= 1; hi += 1; }
  const t0 = new Date(pts[0].t).getTime(), t1 = Math.max(t0 + 1, new Date(pts[pts.length - 1].t).getTime());
  const x = (t) => P + (W - 2 * P) * (new Date(t).getTime() - t0) / (t1 - t0);
  const y = (v) => H - P / 2 - (H - P) * (v - lo) / (hi - lo);
  for (const t of c.thresholds) {
    svg.append(h('line', {x1: P, x2: W - P / 2, y1: y(t.value), y2: y(t.value), stroke: t.kind === 'success' ? '#2e7d32' : '#c62828', 'stroke-dasharray': '4 3'}),
      h('text', {x: 2, y: y(t.value) + 4, 'font-size': 10}, t.op + t.value));
  }
  const fmt = (v) => (Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toPrecision(2));
  svg.append(h('text', {x: W - P / 2, y: 10, 'font-size': 10, 'text-anchor': 'end'}, 'max ' + fmt(hi)),
    h('text', {x: W - P / 2, y: H - 2, 'font-size': 10, 'text-anchor': 'end'},
      'min ' + fmt(lo) + ' · ' + Math.round((t1 - t0) / 1000) + ' s'));
  svg.append(h('polyline', {fill: 'none', stroke: '#1565c0', points: pts.map((q) => x(q.t) + ',' + y(q.v)).join(' ')}));
  for (const q of pts) {
    const col = q.phase === 'Successful' ? '#2e7d32' : q.phase === 'Failed' ? '#c62828' : '#8a8f98';
    svg.append(h('circle', {cx: x(q.t), cy: y(q.v), r: 3, fill: col}, h('title', {}, q.value + ' (' + q.phase + ') ' + q.t)));
  }
  return svg;
}

function check(c) {
  return h('div', {class: 'check', 'data-check': c.name}, chart(c), h('div', {},
    h('b', {}, c.name), ' ', phase(c.phase || 'Idle'),
    c.success ? h('div', {class: 'small'}, 'success: ' + c.success) : null,
    c.failure ? h('div', {class: 'small'}, 'failure: ' + c.failure) : null,
    h('div', {class: 'small'}, c.points.length + ' measurements; last: ' + (c.points.length ? c.points[c.points.length - 1].value : '–')),
    c.message ? h('div', {class: 'small'}, c.message) : null));
}

function events(evs) {
  if (!evs.length) return h('p', {class: 'small'}, 'No events.');
  return h('table', {}, h('tr', {}, ['Last seen', 'Type', 'Reason', 'Object', 'Message'].map((t) => h('th', {}, t))),
    evs.map((e) => h('tr', {}, h('td', {}, new Date(e.last).toLocaleTimeString()), h('td', {}, e.type), h('td', {}, e.reason),
      h('td', {}, e.object), h('td', {}, e.message + (e.count > 1 ? ' (×' + e.count + ')' : '')))));
}

async function post(path, p, b) {
  const res = await fetch(api(path), {
    method: 'POST', headers: {'Content-Type': 'application/json', 'X-Workload-Token': token},
    body: JSON.stringify({action: b.action, kind: p.kind, namespace: p.namespace, name: p.name})});
  return res.json();
}

// preview asks the server what the action would send (the verb under --dry-run=client) and
// shows it in the confirmation.
async function preview(p, b) {
  const r = await post('api/preview', p, b);
  pending = {p, b};
  $('confirm-title').textContent = 'kubectl workload ' + b.label + ' ' + b.target + ' -n ' + p.namespace;
  $('confirm-text').textContent = r.error ? 'Refused: ' + r.error : 'This will change:';
  $('confirm-patch').textContent = r.error ? '' : r.line.replace(/ \(dry run: would send /, '\n\nPatch sent: ').replace(/\)$/, '');
  $('confirm-ok').disabled = !!r.error;
  $('confirm').showModal();
}

$('confirm-cancel').addEventListener('click', () => { pending = null; $('confirm').close(); });
$('confirm-ok').addEventListener('click', async () => {
  const {p, b} = pending || {};
  $('confirm').close();
  pending = null;
  if (!b) return;
  const r = await post('api/action', p, b);
  const el = $('result');
  el.hidden = false;
  el.className = r.error ? 'bad' : '';
  el.textContent = r.error ? 'Refused (' + r.code + '): ' + r.error : r.line;
});

window.addEventListener('hashchange', route);
route();
