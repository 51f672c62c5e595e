// Tools: the caller's inventory (GET /v1/inventory), filtered as you type; each tool's parameters,
// schema and annotations; and, for a query, what phase 1 would be shown (GET /v1/inventory/search).
import {h, clear, table, dl, json, num, state, yesNo} from './dom.js';
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
    clear(list);
    let n = 0;
    let total = 0;
    for (const s of servers) {
      total += s.tools.length;
      const tools = s.tools.filter((t) => words.every((w) => (t.name + ' ' + (t.title || '') + ' ' + t.description).toLowerCase().includes(w)));
      n += tools.length;
      if (!tools.length) continue;
      list.append(h('h3', {}, s.display_name || s.name, ' ', state(s.status)),
        h('ul', {}, tools.map((t) => h('li', {}, h('button', {type: 'button', class: 'tool', 'data-tool': t.name,
          onclick: () => showTool(detail, s, t)}, h('code', {}, t.name), t.available ? '' : ' (unavailable)',
        h('span', {class: 'muted small'}, ' ', t.title || firstSentence(t.description)))))));
    }
    count.textContent = words.length ? `${num(n)} of ${num(total)} tools match.` : `${num(total)} tools.`;
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

// showTool shows one tool: its description, parameters, the annotations its schema carries and
// the schema as the server sent it.
function showTool(detail, server, t) {
  clear(detail).append(
    h('h2', {}, h('code', {}, t.name)),
    t.title ? h('p', {}, h('strong', {}, t.title)) : '',
    h('p', {}, t.description),
    dl([['Server', h('span', {}, server.display_name || server.name, ' ', state(server.status))],
      ['Available', t.available ? yesNo(true) : h('span', {class: 'problem'}, '✗ ' + (t.unavailable_reason || 'no'))]]),
    t.parameters && t.parameters.length ? table('Parameters', ['Name', 'Type', 'Required', 'Description', 'Allowed values'],
      t.parameters.map((p) => [h('code', {}, p.name), p.type, p.required ? 'required' : 'optional', p.description || '',
        p.allowed_values ? p.allowed_values.map((v) => JSON.stringify(v)).join(', ') : ''])) : h('p', {class: 'muted'}, 'No parameters.'),
    annotations(t.input_schema),
    h('details', {open: true}, h('summary', {}, 'Input schema'), h('pre', {class: 'code'}, json(t.input_schema))));
}

// The JSON Schema annotation keywords shown per property.
const ANNOTATIONS = ['title', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', 'format', 'minimum', 'maximum', 'pattern'];

function annotations(schema) {
  const rows = [];
  for (const [name, p] of Object.entries((schema && schema.properties) || {})) {
    for (const k of ANNOTATIONS) {
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
