// Usage: requests, tool calls, errors and tokens over time (GET /v1/usage with a bucket), by org,
// team, agent, tool or model, drawn with uPlot; each chart also as a table, and the window's
// totals per group. Admins only when callers authenticate, as the API has it.
import uPlot from './vendor/uplot/uPlot.esm.js';
import {h, clear, table, num, time} from './dom.js';
import {get, APIError} from './api.js';

const WINDOWS = [
  {id: '24h', label: 'Last 24 hours, by hour', since: '24h', bucket: '1h'},
  {id: '7d', label: 'Last 7 days, by hour', since: '7d', bucket: '1h'},
  {id: '30d', label: 'Last 30 days, by day', since: '30d', bucket: '1d'},
];
const METRICS = [
  {id: 'requests', title: 'Requests', value: (r) => r.requests},
  {id: 'tool_calls', title: 'Tool calls', value: (r) => r.tool_calls},
  {id: 'errors', title: 'Tool errors', value: (r) => r.tool_errors},
  {id: 'tokens', title: 'Tokens (prompt + completion)', value: (r) => r.prompt_tokens + r.completion_tokens},
];
// Series are told apart by colour and by dash pattern, so that no colour is needed to read them.
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#7f7f7f'];
const DASHES = [[], [8, 4], [2, 3], [12, 3, 2, 3], [4, 4], [1, 2], [16, 4], [6, 2, 2, 2]];
const MAX_SERIES = 7; // then "others"
const EVERY = 30000; // ms between refreshes
const SOON = 2000; // ms before the next look while the window has no records

export function render(root, {signal}) {
  const by = h('select', {id: 'usage-by'}, ['org', 'team', 'agent', 'tool', 'model'].map((v) => h('option', {value: v}, v)));
  const win = h('select', {id: 'usage-window'}, WINDOWS.map((w) => h('option', {value: w.id}, w.label)));
  const status = h('p', {id: 'usage-status', class: 'muted small', role: 'status'}, 'Loading…');
  const charts = h('div', {id: 'usage-charts', class: 'charts', 'data-state': 'loading'});
  const totals = h('div', {id: 'usage-totals'});
  root.append(h('h1', {}, 'Usage'),
    h('form', {class: 'inline-form card', onsubmit: (e) => {
      e.preventDefault();
      load();
    }},
    h('label', {for: 'usage-by'}, 'Group by'), by,
    h('label', {for: 'usage-window'}, 'Window'), win,
    h('button', {type: 'submit'}, 'Refresh')),
    status, charts, totals);
  by.addEventListener('change', load);
  win.addEventListener('change', load);
  const plots = [];
  signal.addEventListener('abort', () => plots.forEach((p) => p.destroy()));

  let timer;
  // schedule loads again in a while; sooner while the window has no records, which are written
  // off the request path, in batches.
  function schedule(any) {
    clearTimeout(timer);
    if (!signal.aborted) timer = setTimeout(() => (document.hidden ? schedule(any) : load()), any ? EVERY : SOON);
  }
  signal.addEventListener('abort', () => clearTimeout(timer));

  async function load() {
    const w = WINDOWS.find((x) => x.id === win.value);
    let s;
    try {
      s = await get(`/v1/usage?group_by=${by.value}&since=${w.since}&bucket=${w.bucket}`, {signal});
    } catch (err) {
      if (signal.aborted) return;
      status.textContent = err instanceof APIError ? err.text : 'The API did not answer: ' + err.message;
      status.className = 'problem';
      charts.dataset.state = 'error';
      root.dataset.state = 'error';
      schedule(true);
      return;
    }
    if (signal.aborted) return;
    plots.splice(0).forEach((p) => p.destroy());
    draw(s, w, charts, totals, plots);
    status.className = 'muted small';
    status.textContent = `${time(s.since)} to ${time(s.until)}, ${s.rows.length} ${s.rows.length === 1 ? 'row' : 'rows'}` + (s.truncated ? ' (truncated: the oldest are left out)' : '') +
      '; refreshes every ' + EVERY / 1000 + ' s.';
    root.dataset.state = 'ready';
    schedule(s.rows.length > 0);
  }
  load();
}

// chart draws metric m in box: one series per group, each bucket a point.
function chart(m, box, xs, index, rows, shown, names, plots) {
  const ys = names.map(() => xs.map(() => 0));
  for (const r of rows) {
    const i = index.get(Math.floor(Date.parse(r.bucket) / 1000));
    if (i === undefined) continue;
    let j = shown.indexOf(r.key);
    if (j < 0) j = shown.length; // others
    ys[j][i] += m.value(r);
  }
  const opts = {
    width: Math.max(260, box.clientWidth - 34), // the card's width, less its padding
    height: 220,
    scales: {x: {time: true}, y: {range: (_u, _min, max) => [0, Math.max(1, max) * 1.1]}},
    axes: [{}, {size: 60, values: (_u, vals) => vals.map((v) => num(v))}],
    series: [{label: 'Time', value: (_u, v) => v === null ? '–' : new Date(v * 1000).toLocaleString('en-GB')},
      ...names.map((name, i) => ({label: name, stroke: COLOURS[i % COLOURS.length], dash: DASHES[i % DASHES.length], width: 2,
        points: {show: xs.length <= 48, size: 5}, value: (_u, v) => v === null ? '–' : num(v)}))],
    legend: {live: true},
  };
  plots.push(new uPlot(opts, [xs, ...ys], box));
  box.dataset.drawn = 'true';
  box.setAttribute('aria-describedby', 'table-' + m.id);
  // The chart's figures as a table: for a screen reader, or to read exact values.
  const tableRows = xs.map((t, i) => [new Date(t * 1000).toLocaleString('en-GB'), ...ys.map((y) => num(y[i]))]).filter((_r, i) => ys.some((y) => y[i]));
  box.append(h('details', {}, h('summary', {}, 'Table of ' + m.title.toLowerCase()),
    table('!' + m.title + ' per bucket', ['Bucket', ...names], tableRows, {id: 'table-' + m.id})));
}

// draw makes one chart per metric, with one series per group (the busiest, then "others"), each
// bucket of the window a point, empty buckets 0.
function draw(s, w, charts, totals, plots) {
  const step = w.bucket === '1d' ? 86400 : 3600;
  const first = Math.floor(Date.parse(s.since) / 1000 / step) * step;
  const last = Math.floor((Date.parse(s.until) / 1000 - 1) / step) * step;
  const xs = [];
  for (let t = first; t <= last; t += step) xs.push(t);
  const index = new Map(xs.map((t, i) => [t, i]));
  const sum = new Map();
  for (const r of s.rows) {
    const t = sum.get(r.key) || {requests: 0, tool_calls: 0, tool_errors: 0, model_calls: 0, prompt_tokens: 0, completion_tokens: 0};
    for (const k of Object.keys(t)) t[k] += r[k];
    sum.set(r.key, t);
  }
  const keys = [...sum.keys()].sort((a, b) => sum.get(b).requests - sum.get(a).requests || (a < b ? -1 : 1));
  const shown = keys.slice(0, MAX_SERIES);
  const series = keys.length > MAX_SERIES ? [...shown, 'others'] : shown;
  const label = (k) => k === '' ? '(no credential)' : k;

  clear(charts);
  charts.dataset.rows = String(s.rows.length);
  if (!s.rows.length) {
    charts.append(h('p', {class: 'muted'}, 'No requests in this window yet.'));
  } else {
    // Every card first, then the charts: each takes its card's width once the grid has laid them out.
    const boxes = METRICS.map((m) => charts.appendChild(h('figure', {class: 'chart card', id: 'chart-' + m.id}, h('figcaption', {}, m.title))));
    METRICS.forEach((m, k) => chart(m, boxes[k], xs, index, s.rows, shown, series.map(label), plots));
  }
  charts.dataset.state = 'drawn';
  clear(totals).append(table('Totals over the window', ['Group', 'Requests', 'Tool calls', 'Tool errors', 'Model calls', 'Prompt tokens', 'Completion tokens'],
    keys.map((k) => {
      const t = sum.get(k);
      return [label(k), num(t.requests), num(t.tool_calls), num(t.tool_errors), num(t.model_calls), num(t.prompt_tokens), num(t.completion_tokens)];
    }), {id: 'usage-table', class: 'card'}));
}
