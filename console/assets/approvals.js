// Approvals: the calls held for a person's approval that the caller may decide (its own, and
// those of the identities whose approvers name it; admins when none are named), soonest to
// expire first, each with its exact arguments, who asked, the query and why it was held; Approve
// and Decline decide it once. Admins also see the newest decisions. Everything a call carries
// is shown as text, never as markup.
import {h, clear, table, dl, json, time} from './dom.js';
import {get, post, APIError} from './api.js';

const EVERY = 5000; // ms between refreshes of the list

export function render(root, {args, signal}) {
  const wanted = args[0] || ''; // #/approvals/ID (a notice's link) opens the page at that call
  const status = h('p', {id: 'approvals-status', class: 'muted small', role: 'status'}, 'Loading…');
  const list = h('div', {id: 'approvals-list'});
  const result = h('div', {id: 'approvals-result', 'aria-live': 'polite'});
  const decisions = h('div', {id: 'approvals-decisions'});
  root.append(h('h1', {}, 'Approvals'), status, result, list, decisions);
  let busy = false; // a decision is being sent: the list waits for its answer
  let skew = 0; // the server's clock minus this browser's, ms
  let shown = false; // the wanted call was looked for

  async function refresh() {
    if (busy) return;
    let r;
    try {
      r = await get('/ui/api/approvals', {signal});
    } catch (err) {
      if (signal.aborted) return;
      status.textContent = err instanceof APIError ? err.text : 'The API did not answer: ' + err.message;
      status.className = 'problem';
      root.dataset.state = 'error';
      return;
    }
    if (signal.aborted || busy) return;
    skew = new Date(r.now).getTime() - Date.now();
    status.className = 'muted small';
    status.textContent = `${r.approvals.length} held call${r.approvals.length === 1 ? '' : 's'} you may decide, soonest to expire first; refreshes every ${EVERY / 1000} s.`;
    clear(list).append(...(r.approvals.length ? r.approvals.map(card) : [h('p', {class: 'muted'}, 'Nothing awaits your approval.')]));
    if (wanted && !shown) {
      shown = true;
      const el = list.querySelector(`[data-held="${CSS.escape(wanted)}"]`);
      if (el) {
        el.classList.add('wanted');
        el.scrollIntoView({block: 'start'});
      } else {
        result.append(h('p', {class: 'muted', id: 'approvals-gone'}, 'The call this link names is no longer awaiting a decision you may make: decided, expired, or not yours to decide.'));
      }
    }
    if (r.decisions) {
      clear(decisions).append(h('section', {class: 'card', 'aria-labelledby': 'approvals-decided-title'},
        h('h2', {id: 'approvals-decided-title'}, 'Decisions'),
        r.decisions.length ? table('!Decisions', ['When', 'Outcome', 'By', 'Tool', 'Asked by', 'Request'], r.decisions.map((d) => [
          time(d.at), h('span', {class: 'outcome outcome-' + d.outcome, 'data-outcome': d.outcome}, d.outcome), d.by || '–',
          h('code', {}, d.server + '.' + d.tool), d.identity || '–', d.request_id || '–',
        ]), {id: 'decisions-table'}) : h('p', {class: 'muted'}, 'No decision yet.')));
    }
    root.dataset.state = 'ready';
  }

  function left(expires) {
    const s = Math.round((new Date(expires).getTime() - Date.now() - skew) / 1000);
    if (s <= 0) return 'expired';
    if (s < 120) return s + ' s left';
    return Math.round(s / 60) + ' min left';
  }

  function card(l) {
    const c = l.call;
    const approve = h('button', {type: 'button', 'data-action': 'approve', onclick: () => decide(l, 'approve')}, 'Approve');
    const decline = h('button', {type: 'button', class: 'secondary', 'data-action': 'decline', onclick: () => decide(l, 'decline')}, 'Decline');
    return h('section', {class: 'card held', 'data-held': l.id, 'aria-label': 'Held call ' + c.server + '.' + c.tool},
      h('h2', {}, h('code', {}, c.server + '.' + c.tool)),
      dl([
        ['Server', c.server],
        ['Tool', c.tool],
        ['Asked by', c.identity || '(no credential)'],
        ['Query', c.query ? h('q', {class: 'held-query'}, c.query) : h('span', {class: 'muted'}, '(not known)')],
        ['Why held', c.reason],
        ['Time left', h('span', {class: 'held-left'}, left(c.expires_at))],
        ['Request', c.request_id || undefined],
      ]),
      h('p', {class: 'small muted'}, 'Arguments, exactly as the call would run with them:'),
      h('pre', {class: 'code held-arguments'}, json(c.arguments ?? {})),
      h('p', {class: 'actions'}, approve, ' ', decline));
  }

  async function decide(l, action) {
    busy = true;
    for (const b of list.querySelectorAll(`[data-held="${l.id}"] button`)) b.disabled = true;
    clear(result);
    try {
      const r = await post(`/ui/api/approvals/${encodeURIComponent(l.id)}/${action}`, {}, {signal});
      result.append(h('p', {class: 'ok', 'data-decided': r.decision}, outcomeText(l, r)));
      if (r.call) result.append(h('details', {class: 'card'}, h('summary', {}, 'What the call gave'), h('pre', {class: 'code'}, json(r.call))));
    } catch (err) {
      if (signal.aborted) return;
      result.append(h('p', {class: 'problem', role: 'alert'}, err instanceof APIError ? err.text : err.message));
    } finally {
      busy = false;
    }
    refresh();
  }

  refresh();
  const timer = setInterval(() => {
    if (!document.hidden) refresh();
  }, EVERY);
  signal.addEventListener('abort', () => clearInterval(timer));
}

// outcomeText says what a decision did, in words.
function outcomeText(l, r) {
  const name = l.call.server + '.' + l.call.tool;
  if (r.decision === 'declined') return `✗ Declined ${name}: it will not run.`;
  if (r.resumed) return `✓ Approved ${name}: the request that held it (${r.resumed}) runs it now.`;
  const e = r.call && r.call.error;
  return e ? `✓ Approved ${name}, but it did not run: ${e.code}: ${e.message}` : `✓ Approved ${name}: it ran.`;
}
