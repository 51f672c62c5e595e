// Overview: the model server, each MCP server, the rate limits, the usage store and the build,
// refreshed every few seconds while the page is shown. What /readyz keeps for admins (errors,
// list changes) the page shows to admins only, as the API does.
import {h, clear, section, table, dl, yesNo, state, num, time} from './dom.js';
import {get, APIError} from './api.js';

const EVERY = 5000; // ms between refreshes

export function render(root, {about, signal}) {
  const updated = h('p', {class: 'muted small', id: 'overview-updated'}, 'Loading…');
  const body = h('div', {class: 'grid'});
  root.append(h('h1', {}, 'Overview'), updated, body);

  async function refresh() {
    try {
      const ready = await get('/readyz', {signal, ok: [503]});
      const inv = about.admin ? null : await get('/v1/inventory', {signal});
      if (signal.aborted) return;
      clear(body).append(...view(about, ready, inv));
      updated.textContent = 'Updated ' + new Date().toLocaleTimeString('en-GB') + '; refreshes every ' + EVERY / 1000 + ' s.';
      root.dataset.state = 'ready';
    } catch (err) {
      if (signal.aborted) return;
      updated.textContent = err instanceof APIError ? err.text : 'The API did not answer: ' + err.message;
      updated.className = 'problem';
      root.dataset.state = 'error';
    }
  }
  refresh();
  const timer = setInterval(() => {
    if (!document.hidden) refresh();
  }, EVERY);
  signal.addEventListener('abort', () => clearInterval(timer));
}

function view(about, ready, inv) {
  const out = [];
  const m = ready.model;
  if (m) {
    out.push(section('Model server', dl([
      ['Ready', yesNo(ready.ready, 'ready', 'not ready')],
      ['Host', h('code', {}, m.host)],
      ['Model', h('code', {}, m.name)],
      ['Reachable', yesNo(m.reachable)],
      ['Pulled', yesNo(m.pulled)],
      ['Prompts over estimate', num(m.estimate_exceeded)],
      ['Error', m.error ? h('span', {class: 'problem'}, m.error) : undefined],
    ])));
  } else {
    out.push(section('Model server', dl([['Ready', yesNo(ready.ready, 'ready', 'not ready')]]),
      h('p', {class: 'muted small'}, 'The model server\'s details are for admins (auth.admins).')));
  }
  out.push(servers(ready, inv));
  const facts = [];
  if (about.limits || ready.limits) {
    const l = about.limits || ready.limits;
    facts.push(['Rate limits', h('span', {}, h('code', {}, l.backend), l.dropped_charges ? ` (${num(l.dropped_charges)} charges dropped)` : '')]);
  }
  if (about.usage) {
    facts.push(['Usage store', h('span', {}, h('code', {}, about.usage.backend), about.usage.where ? [' ', h('code', {}, about.usage.where)] : '',
      about.usage_dropped ? ` (${num(about.usage_dropped)} records dropped)` : '')]);
  }
  if (ready.trajectory) {
    facts.push(['Trajectory log', `${num(ready.trajectory.written)} written, ${num(ready.trajectory.dropped)} dropped`]);
  }
  const b = about.build;
  out.push(section('This server', dl([
    ...facts,
    ['Version', h('code', {}, b.version)],
    ['Build', h('span', {}, b.go, b.revision ? [' · ', h('code', {}, b.revision.slice(0, 12)), b.modified ? ' (modified)' : ''] : '',
      b.time ? ' · ' + time(b.time) : '')],
    ['Callers', about.authenticates ? 'authenticate (API keys or JWTs)' : 'need no credential (loopback, no keys)'],
    ['You', h('span', {}, h('code', {}, about.identity || '–'), about.admin ? ', admin' : '')],
    ['Recent requests kept', about.admin ? num(about.recent_requests) : undefined],
  ])));
  return out;
}

function servers(ready, inv) {
  if (ready.servers) {
    const rows = ready.servers.map((s) => [
      s.display_name || s.name, state(s.status), num(s.tools), num(s.list_changed),
      s.error || s.last_error ? h('span', {class: 'problem'}, s.error || s.last_error) : h('span', {class: 'muted'}, 'none'),
    ]);
    return section('MCP servers', table('!MCP servers', ['Server', 'Status', 'Tools', 'List changes', 'Last error'], rows, {id: 'servers'}));
  }
  const rows = (inv ? inv.servers : []).map((s) => [s.display_name || s.name, state(s.status), num(s.tools.length)]);
  return section('MCP servers', table('!MCP servers', ['Server', 'Status', 'Your tools'], rows, {id: 'servers'}),
    h('p', {class: 'muted small'}, 'Errors and list changes are for admins (auth.admins).'));
}
