// Recent requests: the last request reports the server keeps in memory (ui.recent_requests),
// newest first; opening one shows its timeline. Admins only when callers authenticate.
import {h, clear, table, dl, json, ms, num, time} from './dom.js';
import {get, APIError} from './api.js';
import {render as timeline} from './timeline.js';

const EVERY = 5000; // ms between refreshes of the list

export function render(root, {args, signal}) {
  if (args[0]) return detail(root, args[0], signal);
  const status = h('p', {id: 'recent-status', class: 'muted small', role: 'status'}, 'Loading…');
  const list = h('div', {id: 'recent-list'});
  root.append(h('h1', {}, 'Recent requests'), status, list);
  async function refresh() {
    let r;
    try {
      r = await get('/ui/api/requests', {signal});
    } catch (err) {
      if (signal.aborted) return;
      status.textContent = err instanceof APIError ? err.text : 'The API did not answer: ' + err.message;
      status.className = 'problem';
      root.dataset.state = 'error';
      return;
    }
    if (signal.aborted) return;
    status.textContent = `The last ${num(r.requests.length)} of up to ${num(r.capacity)} kept in memory (ui.recent_requests), newest first; refreshes every ${EVERY / 1000} s.`;
    clear(list).append(r.requests.length ? table('!Recent requests', ['Request', 'Started', 'Endpoint', 'Identity', 'Status', 'Tools', 'Time', 'Tokens'],
      r.requests.map((q) => [
        h('a', {href: '#/recent/' + q.id, 'data-request': q.id, 'data-endpoint': q.endpoint}, '#' + q.id),
        time(q.start),
        h('code', {}, (q.method ? q.method + ' ' : '') + q.endpoint),
        q.identity || h('span', {class: 'muted'}, '(no credential)'),
        statusOf(q),
        (q.tools || []).join(', ') || (q.endpoint.startsWith('/v1/') && q.stopped ? h('span', {class: 'muted'}, 'none') : ''),
        ms(q.duration_ms),
        q.model_calls ? `${num(q.prompt_tokens)} + ${num(q.completion_tokens)}` : '',
      ]), {id: 'recent-table'}) : h('p', {class: 'muted'}, 'No request yet.'));
    root.dataset.state = 'ready';
  }
  refresh();
  const timer = setInterval(() => {
    if (!document.hidden) refresh();
  }, EVERY);
  signal.addEventListener('abort', () => clearInterval(timer));
}

// statusOf shows a request's status: a request whose calls were held says so, with what became
// of each (held, approved, declined, withdrawn, expired), rather than that it ran.
function statusOf(q) {
  const held = q.held || [];
  if (held.length && q.status < 400) {
    const ran = held.every((c) => c.state === 'approved');
    return h('span', {class: ran ? 'ok' : 'held-status', 'data-held': held.map((c) => c.state).join(' ')},
      (ran ? '✓ ' : '⏸ ') + q.status + ' ' + held.map((c) => c.state + ': ' + c.tool).join(', '));
  }
  const bad = q.status >= 400 || q.error_code || q.degraded_reason;
  return h('span', {class: bad ? 'problem' : 'ok'}, (bad ? '✗ ' : '✓ ') + q.status + (q.error_code ? ' ' + q.error_code : '') +
    (q.degraded_reason ? ' (degraded: ' + q.degraded_reason + ')' : ''));
}

async function detail(root, id, signal) {
  root.append(h('p', {}, h('a', {href: '#/recent'}, '← All recent requests')), h('h1', {}, 'Request #' + id));
  let d;
  try {
    d = await get('/ui/api/requests/' + encodeURIComponent(id), {signal});
  } catch (err) {
    if (signal.aborted) return;
    root.append(h('p', {class: 'problem', role: 'alert'}, err instanceof APIError ? err.text : err.message));
    root.dataset.state = 'error';
    return;
  }
  root.append(
    h('section', {class: 'card', 'aria-label': 'Summary'}, dl([
      ['Endpoint', h('code', {}, (d.method ? d.method + ' ' : '') + d.endpoint)],
      ['Started', time(d.start)],
      ['Took', ms(d.duration_ms)],
      ['Identity', d.identity || '(no credential)'],
      ['Status', statusOf(d)],
      ['Model calls', `${num(d.model_calls)}: ${num(d.prompt_tokens)} prompt + ${num(d.completion_tokens)} completion tokens`],
      ['Answered by', d.answered_by || undefined],
    ])),
    h('section', {class: 'card', 'aria-labelledby': 'rq-tl-title'}, h('h2', {id: 'rq-tl-title'}, 'Timeline'),
      h('div', {id: 'request-timeline'}, d.outcome || d.council ? timeline(d.outcome || {}, {council: d.council, final: d.council ? d.council.final : undefined, answeredBy: d.answered_by})
        : h('p', {class: 'muted'}, 'This request routed nothing.'))),
    d.other_model_calls ? h('section', {class: 'card', 'aria-labelledby': 'rq-mc-title'}, h('h2', {id: 'rq-mc-title'}, 'Other model calls'),
      table('!Other model calls', ['Phase', 'Model', 'Time', 'Tokens', 'Error'], d.other_model_calls.map((m) => [m.phase, h('code', {}, m.model), ms(m.duration_ms),
        `${num(m.prompt_tokens)} + ${num(m.completion_tokens)}`, m.error || '']))) : '',
    h('details', {class: 'card'}, h('summary', {}, 'The report as JSON'), h('pre', {class: 'code'}, json(d))));
  root.dataset.state = 'ready';
}
