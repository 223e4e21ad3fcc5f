// The dashboard, /: the sandboxes of the cluster with the node that owns each, the
// cluster's members (cluster.js), and for the selected sandbox its processes, a
// process's output tail and the live event stream. Plain DOM, no framework.
//
// The sandbox list is polled (every 3 s while the tab is visible); the selected
// sandbox's processes are re-read when its event stream reports a process event, and
// every 5 s besides. The selection lives in the URL hash (#sb=ID).

import './style.css';
import { api, el, enc, fmtBytes, fmtMs, fmtTime, getToken, logout, sandboxPath, takeTokenFromURL } from './api.js';
import { nodeState, shortNode, startCluster } from './cluster.js';
import { SSEStream } from './sse.js';

takeTokenFromURL();

const $ = (sel) => document.querySelector(sel);
const MAX_EVENTS = 500;
const MAX_TAIL = 64 * 1024;
const TAIL_BACK = 16 * 1024;

let selected = new URLSearchParams(location.hash.slice(1)).get('sb') || '';
let sandboxes = [];
let eventStream = null;
let tailStream = null;
let tailProc = '';
let procTimer = 0;
// me is GET /v1/whoami: the token's tenant and whether it is an admin's (null until
// known, or on a server without the route). The sandbox list is already only what the
// token may see; an admin's shows every tenant's, with a tenant column.
let me = null;

function status(text, isError) {
  const s = $('#status');
  s.textContent = text || '';
  s.classList.toggle('error', !!isError);
}

function report(err) {
  status(err && err.message ? err.message : String(err), true);
}

// --- sandboxes -------------------------------------------------------------------

async function loadSandboxes() {
  loadWhoami();
  try {
    const res = await api('GET', '/v1/sandboxes');
    sandboxes = (res && res.sandboxes) || [];
    sandboxes.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? -1 : 1));
    renderSandboxes();
    if (status.lastWasLoadError) status('');
    status.lastWasLoadError = false;
  } catch (err) {
    report(err);
    status.lastWasLoadError = true;
  }
  $('#logout').hidden = !getToken();
}

function renderSandboxes() {
  const tbody = $('#sandboxes tbody');
  tbody.replaceChildren(
    ...sandboxes.map((sb) => {
      const b = sb.budget || {};
      const c = sb.counts || {};
      const labels = Object.entries(sb.labels || {})
        .map(([k, v]) => `${k}=${v}`)
        .join(', ');
      return el(
        'tr',
        { dataset: { sandbox: sb.id }, class: sb.id === selected ? 'selected' : '' },
        el('td', {}, el('a', { href: `#sb=${enc(sb.id)}`, class: 'mono', onclick: (ev) => select(ev, sb.id) }, sb.id)),
        ...(isAdmin() ? [el('td', { class: 'mono tenant' }, sb.tenant || '–')] : []),
        el('td', {}, el('span', { class: `badge s-${sb.state}` }, sb.state)),
        nodeCell(sb.node),
        el('td', { class: 'mono small' }, labels || '–'),
        el(
          'td',
          { class: 'small', title: JSON.stringify(b, null, 1) },
          `${b.max_processes ?? '–'} procs · idle ${fmtMs(b.idle_ttl_ms)} · max ${fmtMs(b.max_duration_ms)} · exec ${fmtMs(b.max_exec_timeout_ms)} · buf ${fmtBytes(b.output_buffer_bytes)}`,
        ),
        el('td', { class: 'mono' }, `${c.processes ?? 0} / ${c.sessions ?? 0} / ${c.terminals ?? 0}`),
        el('td', { class: 'small', title: sb.last_active_at || '' }, fmtTime(sb.last_active_at)),
        el(
          'td',
          { class: 'actions' },
          // rel=opener: a noopener tab would not get a copy of this tab's sessionStorage,
          // so it would ask for the token again. The page is our own, same origin.
          el('a', { href: `/t/${enc(sb.id)}/main`, target: '_blank', rel: 'opener', class: 'button' }, 'Terminal'),
          el('button', { type: 'button', class: 'danger', onclick: () => deleteSandbox(sb.id) }, 'Delete'),
        ),
      );
    }),
  );
  $('#no-sandboxes').hidden = sandboxes.length > 0;
}

// nodeCell shows the node that owns a sandbox, marked when the cluster does not
// count it alive (its sandboxes move once its lease has run out).
function nodeCell(node) {
  const st = nodeState(node);
  const off = st !== '' && st !== 'alive';
  return el(
    'td',
    { class: `mono node${off ? ' node-off' : ''}`, dataset: { node: node || '', nodeState: st }, title: off ? `node ${node} is ${st}` : node },
    shortNode(node) || '–',
  );
}

function isAdmin() {
  return !!(me && me.admin);
}

// loadWhoami shows who the token speaks for: its tenant, whether it is an admin, and
// the tenant's sandbox count against its limit.
async function loadWhoami() {
  let w = null;
  try {
    w = await api('GET', '/v1/whoami');
  } catch {
    w = null; // an older server, or a failed poll: say nothing rather than guess
  }
  const wasAdmin = isAdmin();
  me = w;
  const box = $('#whoami');
  if (!w) {
    box.textContent = '';
    return;
  }
  const count = w.max_sandboxes ? `${w.sandboxes}/${w.max_sandboxes}` : `${w.sandboxes}`;
  box.textContent = `tenant ${w.tenant}${w.admin ? ' (admin: every tenant’s sandboxes)' : ''} · ${count} sandboxes`;
  box.dataset.tenant = w.tenant;
  box.dataset.admin = String(!!w.admin);
  $('#tenant-col').hidden = !w.admin;
  if (wasAdmin !== isAdmin()) renderSandboxes();
}

function select(ev, id) {
  if (ev) ev.preventDefault();
  if (id === selected) return;
  selected = id;
  history.replaceState(null, '', id ? `#sb=${enc(id)}` : location.pathname);
  renderSandboxes();
  openDetail();
}

async function deleteSandbox(id) {
  if (!confirm(`Delete sandbox ${id}? Every process in it is killed and its files are removed.`)) return;
  try {
    await api('DELETE', sandboxPath(id));
    status(`deleted ${id}`);
    if (id === selected) select(null, '');
  } catch (err) {
    report(err);
  }
  loadSandboxes();
}

$('#create').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = ev.target;
  const body = {};
  const id = field(f, 'id').value.trim();
  if (id) body.id = id;
  const labels = parseLabels(field(f, 'labels').value);
  if (labels === null) {
    status('labels are k=v pairs separated by commas', true);
    return;
  }
  if (Object.keys(labels).length) body.labels = labels;
  try {
    const sb = await api('POST', '/v1/sandboxes', body);
    status(`created ${sb.id}`);
    f.reset();
    await loadSandboxes();
    select(null, sb.id);
  } catch (err) {
    report(err);
  }
});

// field finds a form control by name (form.id would be the form's own id).
function field(form, name) {
  return form.elements.namedItem(name);
}

function parseLabels(s) {
  const out = {};
  for (const part of s.split(',')) {
    const p = part.trim();
    if (!p) continue;
    const i = p.indexOf('=');
    if (i <= 0) return null;
    out[p.slice(0, i).trim()] = p.slice(i + 1).trim();
  }
  return out;
}

// --- the selected sandbox --------------------------------------------------------

function openDetail() {
  if (eventStream) eventStream.close();
  eventStream = null;
  closeTail();
  clearInterval(procTimer);
  $('#events').replaceChildren();
  $('#processes tbody').replaceChildren();
  $('#detail-panel').hidden = !selected;
  if (!selected) return;
  $('#sel-id').textContent = selected;
  const sb = selected;
  loadProcesses();
  procTimer = setInterval(() => document.visibilityState === 'visible' && loadProcesses(), 5000);
  eventStream = new SSEStream(`${sandboxPath(sb)}/events/stream`, {
    onEvent: (ev) => {
      if (sb !== selected) return 'stop';
      addEvent(ev);
      return undefined;
    },
    onState: (name, detail) => {
      const s = $('#events-state');
      s.textContent = name === 'open' ? 'live' : `${name}${detail ? ': ' + detail : ''}`;
      s.dataset.state = name;
    },
  });
}

function addEvent(ev) {
  let e;
  try {
    e = JSON.parse(ev.data);
  } catch {
    e = { type: ev.event, data: ev.data };
  }
  if (!e || typeof e !== 'object') e = { data: e };
  const type = e.type || (ev.event !== 'message' ? ev.event : '') || 'event';
  const seq = e.seq ?? ev.id ?? '';
  const data = e.data === undefined ? '' : typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
  const li = el(
    'li',
    { dataset: { type, seq: String(seq) }, class: `ev ev-${type.split('.')[0]}` },
    el('span', { class: 'seq mono' }, `#${seq}`),
    el('span', { class: 'time small' }, fmtTime(e.at)),
    el('span', { class: 'type mono' }, type),
    el('span', { class: 'data mono small', title: data }, data.length > 240 ? data.slice(0, 240) + '…' : data),
  );
  const list = $('#events');
  list.prepend(li);
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
  if (type.startsWith('process.') || type.startsWith('terminal.') || type.startsWith('session.')) scheduleProcesses();
  if (type.startsWith('sandbox.') || type.startsWith('process.') || type.startsWith('terminal.')) scheduleSandboxes();
}

let procSoon = 0;
function scheduleProcesses() {
  if (procSoon) return;
  procSoon = setTimeout(() => {
    procSoon = 0;
    loadProcesses();
  }, 150);
}

let sbSoon = 0;
function scheduleSandboxes() {
  if (sbSoon) return;
  sbSoon = setTimeout(() => {
    sbSoon = 0;
    loadSandboxes();
  }, 300);
}

async function loadProcesses() {
  const sb = selected;
  if (!sb) return;
  try {
    const res = await api('GET', `${sandboxPath(sb)}/processes`);
    if (sb !== selected) return;
    renderProcesses((res && res.processes) || []);
  } catch (err) {
    if (err.status === 404) {
      status(`sandbox ${sb} is gone`, true);
      select(null, '');
      loadSandboxes();
      return;
    }
    report(err);
  }
}

function renderProcesses(procs) {
  procs.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
  const sb = selected;
  $('#processes tbody').replaceChildren(
    ...procs.map((p) => {
      const exited = p.status === 'exited';
      const st = exited ? (p.signal ? `exited (${p.signal})` : `exited (${p.exit_code})`) : p.status;
      return el(
        'tr',
        { dataset: { process: p.id, status: p.status }, class: p.id === tailProc ? 'selected' : '' },
        el('td', { class: 'mono small', title: `pid ${p.pid ?? '–'}` }, p.id),
        el('td', {}, el('span', { class: `badge p-${p.status}${exited && p.exit_code ? ' p-failed' : ''}` }, st)),
        el('td', { class: 'mono small' }, p.tag || '–'),
        el('td', { class: 'mono small cmd', title: p.command || (p.argv || []).join(' ') }, p.label || p.command || (p.argv || []).join(' ')),
        el('td', { class: 'small' }, `${fmtBytes(p.output_offset)}${p.output_dropped ? ` (${fmtBytes(p.output_dropped)} dropped)` : ''}`),
        el(
          'td',
          { class: 'actions' },
          el('button', { type: 'button', onclick: () => openTail(sb, p) }, 'Output'),
          !exited && el('button', { type: 'button', onclick: () => signal(sb, p.id, 'SIGTERM') }, 'Stop'),
          el('button', { type: 'button', class: 'danger', onclick: () => removeProcess(sb, p.id) }, exited ? 'Remove' : 'Kill'),
        ),
      );
    }),
  );
  $('#no-processes').hidden = procs.length > 0;
}

async function signal(sb, id, sig) {
  try {
    await api('POST', `${sandboxPath(sb)}/processes/${enc(id)}/signal`, { signal: sig });
  } catch (err) {
    report(err);
  }
  scheduleProcesses();
}

async function removeProcess(sb, id) {
  try {
    await api('DELETE', `${sandboxPath(sb)}/processes/${enc(id)}`);
    if (id === tailProc) closeTail();
  } catch (err) {
    report(err);
  }
  scheduleProcesses();
}

$('#start-proc').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = ev.target;
  const body = { command: field(f, 'command').value };
  const tag = field(f, 'tag').value.trim();
  if (tag) body.tag = tag;
  if (field(f, 'pty').checked) body.pty = { cols: 100, rows: 30 };
  try {
    const p = await api('POST', `${sandboxPath(selected)}/processes`, body);
    status(`started ${p.id}`);
    field(f, 'command').value = '';
    await loadProcesses();
    openTail(selected, p);
  } catch (err) {
    report(err);
  }
});

$('#open-term').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const t = field(ev.target, 'terminal').value.trim() || 'main';
  window.open(`/t/${enc(selected)}/${enc(t)}`, '_blank'); // with opener: see the Terminal link

});

// --- output tail -----------------------------------------------------------------

const td = () => new TextDecoder('utf-8');

function openTail(sb, p) {
  closeTail();
  tailProc = p.id;
  $('#tail-box').hidden = false;
  $('#tail-id').textContent = p.id;
  const pre = $('#tail');
  pre.textContent = '';
  const dec = td();
  // Start within what the ring still holds, so an old process shows no pointless gap.
  const from = Math.max(p.output_dropped || 0, (p.output_offset || 0) - TAIL_BACK);
  if (from > 0) pre.textContent = `[… ${fmtBytes(from)} earlier output not shown …]\n`;
  for (const tr of document.querySelectorAll('#processes tr')) tr.classList.toggle('selected', tr.dataset.process === p.id);
  tailStream = new SSEStream(`${sandboxPath(sb)}/processes/${enc(p.id)}/output?offset=${from}`, {
    onEvent: (ev) => {
      let d;
      try {
        d = JSON.parse(ev.data);
      } catch {
        return undefined;
      }
      if (ev.event === 'output') {
        appendTail(stripANSI(dec.decode(b64(d.data), { stream: true })));
      } else if (ev.event === 'gap') {
        appendTail(`\n[… ${d.to - d.from} bytes of output lost …]\n`);
      } else if (ev.event === 'exit') {
        appendTail(dec.decode());
        $('#tail-state').textContent = d.signal ? `killed by ${d.signal}` : `exit code ${d.exit_code}`;
        return 'stop';
      }
      return undefined;
    },
    onState: (name, detail) => {
      if (name !== 'ended') $('#tail-state').textContent = name === 'open' ? 'live' : `${name}${detail ? ': ' + detail : ''}`;
    },
  });
}

function appendTail(text) {
  if (!text) return;
  const pre = $('#tail');
  const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  let s = pre.textContent + text;
  if (s.length > MAX_TAIL) s = s.slice(s.length - MAX_TAIL);
  pre.textContent = s;
  if (atBottom) pre.scrollTop = pre.scrollHeight;
}

function closeTail() {
  if (tailStream) tailStream.close();
  tailStream = null;
  tailProc = '';
  $('#tail-box').hidden = true;
  $('#tail-state').textContent = '';
}
$('#tail-close').addEventListener('click', closeTail);

function b64(s) {
  const bin = atob(s || '');
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// stripANSI drops terminal escape sequences and carriage returns from PTY output, so a
// tail in a <pre> stays readable.
function stripANSI(s) {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]|\r(?!\n)/g, '').replace(/\r\n/g, '\n');
}

// --- start ---------------------------------------------------------------------

$('#logout').addEventListener('click', () => {
  logout();
  location.reload();
});

window.addEventListener('hashchange', () => {
  const id = new URLSearchParams(location.hash.slice(1)).get('sb') || '';
  if (id !== selected) {
    selected = id;
    renderSandboxes();
    openDetail();
  }
});

loadSandboxes().then(() => {
  startCluster(renderSandboxes);
  openDetail();
});
setInterval(() => {
  if (document.visibilityState === 'visible') loadSandboxes();
}, 3000);
