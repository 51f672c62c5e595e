// Tools: the caller's inventory (GET /v1/inventory), filtered as you type; each tool's MCP
// annotations as badges and a table, its parameters, schema annotations and schema; the tools a
// server lists that are quarantined, with why, and the scan's findings (both for admins only, as
// the API shows them); and, for a query, what phase 1 would be shown (GET /v1/inventory/search).
import {h, clear, table, dl, json, num, state, yesNo, time, badge} from './dom.js';
import {get, APIError} from './api.js';

export function render(root, {signal}) {
  const filter = h('input', {id: 'tools-filter', type: 'search', autocomplete: 'off', 'aria-controls': 'tools-list'});
  const count = h('p', {id: 'tools-count', class: 'muted small', 'aria-live': 'polite'});
  const list = h('div', {id: 'tools-list', class: 'tool-list'});
  const detail = h('div', {id: 'tool-detail', class: 'card', 'aria-live': 'polite'}, h('p', {class: 'muted'}, 'Choose a tool to see its schema.'));
  const query = h('input', {id: 'search-query', type: 'search', autocomplete: 'off', required: true});
  const results = h('div', {id: 'tools-search', 'data-state': 'idle', 'aria-live': 'polite'});
  const searchForm = h('form', {class: 'inline-form', onsubmit: (e) => {
    e.preventDefault();
    search(query.value.trim(), results, signal);
  }}, h('label', {for: 'search-query'}, 'Query'), query, h('button', {type: 'submit'}, 'Rank the tools'));

  root.append(
    h('h1', {}, 'Tools'),
    h('section', {class: 'card', 'aria-labelledby': 'phase1-title'},
      h('h2', {id: 'phase1-title'}, 'What phase 1 would be shown'),
      h('p', {class: 'muted small'}, 'The tools retrieval ranks for a query, with their scores, and which of them fit phase 1\'s budget.'),
      searchForm, results),
    h('div', {class: 'split'},
      h('section', {class: 'card', 'aria-labelledby': 'inv-title'},
        h('h2', {id: 'inv-title'}, 'Your tools'),
        h('div', {class: 'inline-form'}, h('label', {for: 'tools-filter'}, 'Filter'), filter),
        count, list),
      detail));

  let servers = [];
  const show = () => {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    const matches = (...texts) => words.every((w) => texts.join(' ').toLowerCase().includes(w));
    clear(list);
    let n = 0;
    let total = 0;
    let heldN = 0;
    let heldTotal = 0;
    for (const s of servers) {
      const held = s.quarantined_tools || [];
      total += s.tools.length;
      heldTotal += held.length;
      const tools = s.tools.filter((t) => matches(t.name, t.title || '', t.description, labels(offeredHints(t)).join(' ')));
      const holds = held.filter((q) => matches(s.name + '.' + q.name, (q.definition || {}).title || '', (q.definition || {}).description || '',
        'quarantined', labels(listedHints(q.definition || {})).join(' ')));
      n += tools.length;
      heldN += holds.length;
      if (!tools.length && !holds.length) continue;
      const flagged = new Set((s.findings || []).map((f) => f.tool));
      const changed = new Set((s.pin_changed || []).map((c) => c.tool));
      list.append(h('h3', {}, s.display_name || s.name, ' ', state(s.status)),
        h('ul', {},
          tools.map((t) => h('li', {}, h('button', {type: 'button', class: 'tool', 'data-tool': t.name,
            onclick: () => showTool(detail, s, t)}, h('code', {}, t.name), t.available ? '' : ' (unavailable)',
          badges(offeredHints(t), flagged.has(t.name.slice(s.name.length + 1)) ? badge('scan findings', 'findings') : '',
            changed.has(t.name.slice(s.name.length + 1)) ? badge('pin changed', 'changed') : ''),
          h('span', {class: 'muted small'}, ' ', t.title || firstSentence(t.description))))),
          holds.map((q) => h('li', {class: 'held'}, h('button', {type: 'button', class: 'tool', 'data-quarantined': s.name + '.' + q.name,
            onclick: () => showQuarantined(detail, s, q)}, h('code', {}, s.name + '.' + q.name),
          badges(listedHints(q.definition || {}), badge('quarantined')),
          h('span', {class: 'small'}, ' Not offered: ', reasons(q.reasons)))))),
        findings(s));
    }
    let text = words.length ? `${num(n)} of ${num(total)} tools match.` : `${num(total)} tools.`;
    if (heldTotal) text += words.length ? ` ${num(heldN)} of ${num(heldTotal)} quarantined tools match.` : ` ${num(heldTotal)} more quarantined, not offered.`;
    count.textContent = text;
  };
  filter.addEventListener('input', show);
  get('/v1/inventory', {signal}).then((inv) => {
    servers = inv.servers;
    show();
    root.dataset.state = 'ready';
  }).catch((err) => {
    if (signal.aborted) return;
    list.append(h('p', {class: 'problem', role: 'alert'}, err instanceof APIError ? err.text : err.message));
    root.dataset.state = 'error';
  });
}

function firstSentence(s) {
  const m = /^[^.]*\.?/.exec(s || '');
  return m ? m[0] : '';
}

// HINTS are MCP's tool annotations: the field GET /v1/inventory gives a tool's under
// "annotations" (the hint as the inventory applies it: configuration over server over MCP's
// default), its name in MCP (a quarantined tool's definition is as the server listed it), the
// badge it shows when true, and MCP's default for a hint left unset.
const HINTS = [
  {field: 'read_only_hint', mcp: 'readOnlyHint', label: 'read-only', def: false},
  {field: 'destructive_hint', mcp: 'destructiveHint', label: 'destructive', def: true},
  {field: 'idempotent_hint', mcp: 'idempotentHint', label: 'idempotent', def: false},
  {field: 'open_world_hint', mcp: 'openWorldHint', label: 'open world', def: true},
];

// offeredHints are an offered tool's hints: each {hint, value, set}, where set is true when the
// value differs from MCP's default and undefined when it equals it (the inventory applies the
// default, so an unset hint and one set to its default look the same).
function offeredHints(t) {
  const a = t.annotations || {};
  return HINTS.map((hint) => {
    const value = typeof a[hint.field] === 'boolean' ? a[hint.field] : hint.def;
    return {hint, value, set: value !== hint.def ? true : undefined};
  });
}

// listedHints are the hints of a definition as its server listed it, unset ones at MCP's default.
function listedHints(def) {
  const a = def.annotations || {};
  return HINTS.map((hint) => {
    const set = typeof a[hint.mcp] === 'boolean';
    return {hint, value: set ? a[hint.mcp] : hint.def, set};
  });
}

// labels are the badges a tool's hints earn. MCP's destructiveHint means something only for a
// tool that is not read-only, so a read-only tool is never called destructive.
function labels(hints) {
  const v = Object.fromEntries(hints.map((x) => [x.hint.field, x.value]));
  return HINTS.filter((hint) => v[hint.field] && !(hint.field === 'destructive_hint' && v.read_only_hint)).map((hint) => hint.label);
}

function badges(hints, ...more) {
  return h('span', {class: 'badges'}, labels(hints).map((l) => [' ', badge(l)]), more.filter(Boolean).map((b) => [' ', b]));
}

// hintTable is a tool's MCP annotations: each hint, its value and whether it was set or is MCP's
// default.
function hintTable(hints, title) {
  const ro = hints.find((x) => x.hint.field === 'read_only_hint').value;
  const rows = hints.map(({hint, value, set}) => [
    h('span', {}, h('code', {}, hint.mcp), h('span', {class: 'muted small'}, ' ', hint.label)),
    h('span', {}, h('code', {}, String(value)),
      hint.field === 'destructive_hint' && ro ? h('span', {class: 'muted small'}, ' (a read-only tool changes nothing)') : ''),
    set === true ? 'set' : set === false ? `unset: MCP's default` : `MCP's default, or set to it`]);
  if (title) rows.unshift([h('code', {}, 'title'), title, 'set']);
  return table('Annotations', ['Hint', 'Value', 'Set or default'], rows, {id: 'tool-annotations'});
}

// REASONS say why a tool is quarantined (inventory.QuarantineReason).
const REASONS = {
  pin_changed: 'its definition differs from its pin',
  pin_unverified: 'its pin could not be checked (the pin store did not answer)',
  findings: 'the scan found text aimed at the model',
};

function reasons(rs) {
  return (rs || []).map((r) => REASONS[r] || r).join('; ') + '.';
}

// findings lists what the scan found in a server's tools (admins only); tool, when given, keeps
// only that tool's.
function findings(s, tool) {
  const fs = (s.findings || []).filter((f) => !tool || f.tool === tool);
  if (!fs.length) return '';
  const cells = (f) => [f.kind, h('code', {}, f.where), h('code', {}, f.excerpt), f.detail];
  if (tool) return table('Scan findings', ['Kind', 'Where', 'Excerpt', 'Detail'], fs.map(cells), {class: 'findings'});
  const t = table('!Scan findings of ' + (s.display_name || s.name), ['Tool', 'Kind', 'Where', 'Excerpt', 'Detail'],
    fs.map((f) => [h('code', {}, s.name + '.' + f.tool), ...cells(f)]), {class: 'findings'});
  return h('details', {class: 'findings'}, h('summary', {}, `Scan findings: ${num(fs.length)} in ${s.display_name || s.name}'s tools`), t);
}

// showTool shows one tool: its description, MCP annotations, parameters, the annotations its
// schema carries and the schema as the server sent it.
function showTool(detail, server, t) {
  const name = t.name.slice(server.name.length + 1);
  const changed = (server.pin_changed || []).find((c) => c.tool === name);
  clear(detail).append(
    h('h2', {}, h('code', {}, t.name), badges(offeredHints(t))),
    t.title ? h('p', {}, h('strong', {}, t.title)) : '',
    h('p', {}, t.description),
    dl([['Server', h('span', {}, server.display_name || server.name, ' ', state(server.status))],
      ['Available', t.available ? yesNo(true) : h('span', {class: 'problem'}, '✗ ' + (t.unavailable_reason || 'no'))],
      ['Pin', changed ? h('span', {class: 'problem'}, '✗ differs from its pin ', h('code', {}, changed.pinned)) : t.pin ? h('code', {}, t.pin) : undefined]]),
    hintTable(offeredHints(t)),
    findings(server, name),
    t.parameters && t.parameters.length ? table('Parameters', ['Name', 'Type', 'Required', 'Description', 'Allowed values'],
      t.parameters.map((p) => [h('code', {}, p.name), p.type, p.required ? 'required' : 'optional', p.description || '',
        p.allowed_values ? p.allowed_values.map((v) => JSON.stringify(v)).join(', ') : ''])) : h('p', {class: 'muted'}, 'No parameters.'),
    schemaAnnotations(t.input_schema),
    h('details', {open: true}, h('summary', {}, 'Input schema'), h('pre', {class: 'code'}, json(t.input_schema))));
}

// showQuarantined shows a quarantined tool as its server lists it, for review: why it is held
// back, what the scan found in it, its annotations and its schema.
function showQuarantined(detail, server, q) {
  const d = q.definition || {};
  const a = d.annotations || {};
  clear(detail).append(
    h('h2', {}, h('code', {}, server.name + '.' + q.name), ' ', badge('quarantined')),
    h('p', {class: 'problem'}, 'Not offered to the model and not callable until an admin approves this definition ',
      '(POST /v1/admin/tools/approve): ', reasons(q.reasons)),
    d.title ? h('p', {}, h('strong', {}, d.title)) : '',
    h('p', {}, d.description),
    dl([['Server', h('span', {}, server.display_name || server.name, ' ', state(server.status))],
      ['Held since', time(q.since)],
      ['Pin', h('code', {}, q.pin)],
      ['Pinned', q.pinned ? h('code', {}, q.pinned) : undefined]]),
    hintTable(listedHints(d), a.title),
    findings(server, q.name),
    schemaAnnotations(d.inputSchema),
    h('details', {open: true}, h('summary', {}, 'Input schema'), h('pre', {class: 'code'}, json(d.inputSchema || {}))));
}

// The JSON Schema annotation keywords shown per property.
const KEYWORDS = ['title', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', 'format', 'minimum', 'maximum', 'pattern'];

function schemaAnnotations(schema) {
  const rows = [];
  for (const [name, p] of Object.entries((schema && schema.properties) || {})) {
    for (const k of KEYWORDS) {
      if (p && p[k] !== undefined) rows.push([h('code', {}, name), k, h('code', {}, JSON.stringify(p[k]))]);
    }
  }
  for (const k of ['title', 'description', '$comment']) {
    if (schema && schema[k] !== undefined) rows.unshift([h('em', {}, '(schema)'), k, String(schema[k])]);
  }
  if (!rows.length) return '';
  return table('Schema annotations', ['Property', 'Keyword', 'Value'], rows);
}

// search shows what retrieval offers for q: the ranked tools with their scores and which fit
// phase 1's budget.
async function search(q, out, signal) {
  if (!q) return;
  out.dataset.state = 'loading';
  clear(out).append(h('p', {class: 'muted'}, 'Ranking…'));
  let offer;
  try {
    offer = await get('/v1/inventory/search?k=20&q=' + encodeURIComponent(q), {signal});
  } catch (err) {
    if (signal.aborted) return;
    clear(out).append(h('p', {class: 'problem', role: 'alert'}, err instanceof APIError ? err.text : err.message));
    out.dataset.state = 'error';
    return;
  }
  const shown = new Set(offer.whole_inventory ? offer.ranked.map((r) => r.name) : ((offer.shortlist && offer.shortlist.tools) || []).map((t) => t.name));
  const top = Math.max(...offer.ranked.map((r) => r.score), 0) || 1;
  const rows = offer.ranked.map((r, i) => {
    const bar = h('span', {class: 'bar'});
    bar.style.width = Math.max(2, (100 * r.score) / top) + '%';
    return [String(i + 1), h('code', {}, r.name), h('span', {class: 'score'}, h('span', {class: 'bar-track', 'aria-hidden': 'true'}, bar), ' ', r.score.toFixed(2)),
      shown.has(r.name) ? h('span', {class: 'ok'}, '✓ shown') : h('span', {class: 'muted'}, '– not shown')];
  });
  const sl = offer.shortlist;
  clear(out).append(
    offer.whole_inventory
      ? h('p', {}, 'Every tool fits phase 1\'s budget: phase 1 is shown the whole inventory, whatever the query.')
      : h('p', {}, sl ? `Phase 1 is shown ${num(sl.tools.length)} of ${num(sl.available)} tools: ${num(sl.used_tokens)} of ${num(sl.budget_tokens)} tokens of its budget; ${num(sl.left_out)} left out.` : 'No shortlist.',
        offer.fallback ? h('span', {class: 'problem'}, ' Ranking was lexical: ' + offer.fallback) : ''),
    table('Ranked for “' + offer.query + '”', ['Rank', 'Tool', 'Score', 'Phase 1'], rows, {id: 'ranked'}));
  out.dataset.state = 'ready';
}
