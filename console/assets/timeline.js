// The timeline of one request: each step of its routing (shortlist, selection, arguments and their
// validation, calls and their results or errors) and each stage of its council, with its time and
// tokens, drawn from the /v1/route (or /v1/answer) response. The playground and the recent
// requests page both use it.
import {h, json, ms, num} from './dom.js';

const KIND_NAMES = {
  shortlist: 'Shortlist', select: 'Selection', arguments: 'Arguments', execute: 'Call', dedup: 'Reused call',
  trim: 'Trimmed', capped: 'Over budget', deadline: 'Deadline', native: 'Model call (native)', search: 'Search',
  low_confidence: 'Low confidence', held: 'Awaits approval', refused: 'Refused', weak_shortlist: 'Weak shortlist',
};

// render returns the timeline (an ordered list) of outcome, a routing outcome; opts may carry
// the council's run (council), the answer (final, answeredBy) and, from a stream, each round's
// selection (selections, by round).
export function render(outcome, opts = {}) {
  const list = h('ol', {class: 'timeline'});
  if (!outcome) return list;
  const steps = outcome.trace || [];
  const calls = new Map((outcome.calls || []).map((c) => [c.step, c]));
  const selections = opts.selections || {};
  const routingMS = (outcome.timings_ms && outcome.timings_ms.total) || Math.max(0, ...steps.map((s) => s.start_ms + s.duration_ms));
  const council = opts.council;
  const stages = council ? councilStages(council) : [];
  const total = routingMS + stages.reduce((a, s) => a + s.ms, 0) || 1;
  let shortlist = 0;
  const failed = new Map(); // call step → the failed attempts shown so far

  for (const s of steps) {
    const call = s.call ? calls.get(s.call) : undefined;
    const body = [];
    let what = '';
    switch (s.kind) {
      case 'shortlist': {
        const sl = (outcome.shortlists || [])[shortlist++];
        what = sl ? `for “${sl.query}”` : s.detail || '';
        if (sl) body.push(shortlistTable(sl));
        break;
      }
      case 'select': {
        const sel = selections[s.round];
        what = `round ${s.round}` + (s.detail ? ': ' + s.detail : '');
        const reasoning = (sel && sel.reasoning) || (s.round === 1 ? outcome.reasoning : '');
        if (reasoning) body.push(h('p', {}, h('strong', {}, 'Reasoning: '), reasoning));
        const conf = s.confidence || (sel && sel.confidence);
        if (conf) body.push(h('p', {}, h('strong', {}, 'Confidence: '), confidence(conf)));
        break;
      }
      case 'arguments': {
        what = call ? `step ${call.step}, ${call.server}.${call.tool}` : (s.tool || '');
        const findings = s.error || (s.detail && s.detail !== 'ok' ? s.detail : '');
        if (findings && call) {
          const n = failed.get(call.step) || 0;
          failed.set(call.step, n + 1);
          const attempt = (call.argument_attempts || [])[n];
          body.push(h('p', {class: 'problem'}, h('strong', {}, 'Invalid: '), findings));
          if (attempt) body.push(h('pre', {class: 'code'}, attempt.output));
        } else if (findings) {
          body.push(h('p', {class: 'problem'}, findings));
        } else if (call && call.arguments) {
          body.push(h('pre', {class: 'code', 'data-arguments': call.step}, json(call.arguments)));
        }
        break;
      }
      case 'execute':
      case 'dedup': {
        what = call ? `step ${call.step}, ${call.server}.${call.tool}` : (s.tool || '');
        if (call) {
          if (call.arguments) body.push(h('p', {}, h('strong', {}, 'Arguments: '), h('code', {}, JSON.stringify(call.arguments))));
          if (call.reused_from) body.push(h('p', {}, `Answered by step ${call.reused_from}'s identical call.`));
          body.push(result(call));
        } else if (s.error) {
          body.push(h('p', {class: 'problem'}, s.error));
        }
        break;
      }
      case 'held': {
        what = call ? `step ${call.step}, ${call.server}.${call.tool}: ${s.detail || ''}` : (s.detail || '');
        const p = call && call.pending;
        if (p) {
          body.push(h('p', {}, h('strong', {}, 'Arguments: '), h('code', {}, JSON.stringify(p.arguments))));
          body.push(h('p', {}, 'Run it once with ', h('code', {'data-token': p.token}, `POST /v1/approve {"token": "${p.token}"}`),
            ` before ${p.expires_at}.`));
        } else if (s.error) {
          body.push(h('p', {class: 'problem'}, s.error));
        }
        break;
      }
      default:
        what = s.detail || s.tool || '';
        if (s.error) body.push(h('p', {class: 'problem'}, s.error));
    }
    list.append(entry({kind: s.kind, name: KIND_NAMES[s.kind] || s.kind, what, start: s.start_ms, dur: s.duration_ms, total,
      model: s.model, prompt: s.prompt_tokens, completion: s.completion_tokens, body, failed: !!s.error}));
  }
  // The calls that never got a step of their own (their arguments could not be written, say).
  for (const c of outcome.calls || []) {
    if (c.error && !steps.some((s) => s.call === c.step && ['execute', 'arguments', 'held', 'refused'].includes(s.kind))) {
      list.append(entry({kind: 'execute', name: 'Call', what: `step ${c.step}, ${c.server || '?'}.${c.tool}`, body: [result(c)], failed: true, total}));
    }
  }
  let at = routingMS;
  for (const st of stages) {
    list.append(entry({kind: 'council', name: st.name, what: st.what, start: at, dur: st.ms, total, prompt: st.prompt, completion: st.completion, body: st.body}));
    at += st.ms;
  }
  if (opts.final !== undefined) {
    list.append(entry({kind: 'final', name: 'Answer', what: opts.answeredBy ? 'by ' + opts.answeredBy : '', total,
      body: [h('p', {class: 'final'}, opts.final || '(empty)')]}));
  } else if (outcome.stopped) {
    list.append(entry({kind: 'stopped', name: 'Stopped', what: outcome.stopped + (outcome.degraded ? ': ' + outcome.degraded : ''), total,
      start: routingMS, failed: !!outcome.degraded, body: []}));
  }
  return list;
}

// entry is one step: what it was, when it started and how long it took (in words, and as a bar
// over the request's whole time), its tokens, and its details.
function entry(e) {
  const figures = [];
  if (e.dur !== undefined) figures.push(ms(e.dur));
  if (e.prompt || e.completion) figures.push(`${num(e.prompt)} prompt + ${num(e.completion)} completion tokens`);
  if (e.model) figures.push(e.model);
  const head = h('div', {class: 'step-head'},
    h('span', {class: 'kind'}, e.failed ? '✗ ' + e.name : e.name), ' ',
    h('span', {class: 'what'}, e.what), ' ',
    h('span', {class: 'figures'}, figures.join(' · ')));
  const li = h('li', {class: 'step step-' + e.kind + (e.failed ? ' failed' : ''), 'data-kind': e.kind}, head);
  if (e.dur !== undefined && e.start !== undefined) {
    const bar = h('span', {class: 'bar'});
    bar.style.marginLeft = Math.min(100, (100 * e.start) / e.total) + '%';
    bar.style.width = Math.max(0.5, Math.min(100, (100 * e.dur) / e.total)) + '%';
    li.append(h('div', {class: 'step-bar', title: `from ${ms(e.start)} for ${ms(e.dur)}`}, h('span', {class: 'sr-only'}, `started at ${ms(e.start)}`), bar));
  }
  if (e.body && e.body.length) li.append(h('div', {class: 'step-body'}, e.body));
  return li;
}

function confidence(c) {
  const parts = [];
  if (c.use_tool !== undefined) parts.push(`use_tool ${(100 * c.use_tool).toFixed(1)}%`);
  if (c.tool !== undefined) parts.push(`tool ${(100 * c.tool).toFixed(1)}%`);
  return parts.join(', ');
}

function result(call) {
  if (call.error) return h('p', {class: 'problem'}, h('strong', {}, '✗ ' + call.error.code + ': '), call.error.message);
  const r = call.result;
  if (!r) return h('p', {class: 'muted'}, 'No result.');
  return h('div', {class: r.is_error ? 'problem' : ''},
    h('p', {}, h('strong', {}, r.is_error ? '✗ The tool answered with an error: ' : 'Result: '), h('code', {class: 'result'}, r.text)),
    r.structured !== undefined ? h('details', {}, h('summary', {}, 'Structured content'), h('pre', {class: 'code'}, json(r.structured))) : '');
}

function shortlistTable(sl) {
  return h('div', {},
    h('p', {}, `${num(sl.tools.length)} of ${num(sl.available)} tools shown, ${num(sl.used_tokens)} of ${num(sl.budget_tokens)} tokens; ${num(sl.left_out)} left out.`,
      sl.fallback ? h('span', {class: 'problem'}, ' ' + sl.fallback) : ''),
    h('ol', {class: 'shortlist'}, sl.tools.map((t) => h('li', {}, h('code', {}, t.name), ' ', h('span', {class: 'muted'}, t.score.toFixed(2))))));
}

// councilStages turns a council run into its stages: each member's answer, the reviews and the
// aggregate ranking, the chairman's synthesis.
function councilStages(c) {
  const u = c.usage || {};
  const out = [];
  const s1 = c.stage1 || [];
  out.push({
    name: 'Council, stage 1', what: `${s1.filter((a) => !a.error).length} of ${s1.length} members answered`,
    ms: (u.stage1 && u.stage1.duration_ms) || 0, prompt: u.stage1 && u.stage1.prompt_tokens, completion: u.stage1 && u.stage1.completion_tokens,
    body: s1.map((a) => h('div', {class: 'member'},
      h('p', {}, h('strong', {}, a.model), a.label ? ` (${a.label})` : '', a.usage ? h('span', {class: 'muted'}, ` · ${ms(a.usage.duration_ms)} · ${num(a.usage.prompt_tokens)} + ${num(a.usage.completion_tokens)} tokens`) : ''),
      a.error ? h('p', {class: 'problem'}, '✗ ' + a.error) : h('p', {class: 'answer'}, a.response))),
  });
  if ((c.stage2 || []).length) {
    const ranks = (c.aggregate_rankings || []).map((r) => h('li', {}, h('strong', {}, r.model), ` (${r.label}), average rank ${r.average_rank.toFixed(2)} over ${r.rankings_count}`));
    out.push({
      name: 'Council, stage 2', what: `${c.stage2.length} reviews`,
      ms: (u.stage2 && u.stage2.duration_ms) || 0, prompt: u.stage2 && u.stage2.prompt_tokens, completion: u.stage2 && u.stage2.completion_tokens,
      body: [
        h('p', {}, h('strong', {}, 'Ranking')), h('ol', {class: 'ranking'}, ranks),
        ...c.stage2.map((r) => h('details', {}, h('summary', {}, `${r.model}'s review: `, (r.parsed_ranking || []).join(' > ') || (r.error ? '✗ ' + r.error : 'unparsed')),
          h('pre', {class: 'code'}, r.ranking || ''))),
      ],
    });
  }
  if (c.stage3) {
    out.push({
      name: 'Council, stage 3', what: `${c.stage3.model}` + (c.stage3.answered_by === 'fallback' ? ' failed: the best-ranked answer stands' : ' wrote the answer'),
      ms: (u.stage3 && u.stage3.duration_ms) || 0, prompt: u.stage3 && u.stage3.prompt_tokens, completion: u.stage3 && u.stage3.completion_tokens,
      body: [c.stage3.error ? h('p', {class: 'problem'}, '✗ ' + c.stage3.error) : '', h('p', {class: 'answer'}, c.stage3.response)],
    });
  }
  return out;
}
