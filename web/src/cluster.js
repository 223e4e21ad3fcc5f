// The dashboard's cluster panel: GET /v1/cluster as the node that served the page sees
// it. A summary in the top bar (this node, the leader, members alive), and a panel with
// every member: status, raft role (leader, voter or non-voter), how many partitions it
// owns (its share of the sandboxes) and its addresses, with this node and the leader
// marked; above it the raft term, this node's applied index and its lease.
//
// Refreshed every 5 s while the tab is visible. The sandbox list asks nodeState() how
// the owner of each sandbox is doing, to mark sandboxes whose owner is not alive.

import { api, el, fmtTime } from './api.js';

const $ = (sel) => document.querySelector(sel);
const REFRESH_MS = 5000;

// view is the last answer of GET /v1/cluster; null before the first or after a failure.
let view = null;
let onChange = () => {};

// startCluster starts the refresh loop; changed is called after every refresh that
// changed something, so the sandbox list can re-render its node column.
export function startCluster(changed) {
  onChange = changed || onChange;
  loadCluster();
  setInterval(() => {
    if (document.visibilityState === 'visible') loadCluster();
  }, REFRESH_MS);
}

// nodeState returns the status of member id ('alive', 'down', 'left'), 'unknown' for an
// id the member table lacks, or '' when no cluster view is known.
export function nodeState(id) {
  if (!view) return '';
  const m = (view.members || []).find((x) => x.id === id);
  return m ? m.status : 'unknown';
}

// shortNode shortens a node id made by the server (a UUID) to its first 8 hex digits,
// as git shortens hashes; ids an operator chose (--node-id) are shown whole. The
// full id goes in the element's title.
export function shortNode(id) {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id || '') ? id.slice(0, 8) : id;
}

export async function loadCluster() {
  let c = null;
  try {
    c = await api('GET', '/v1/cluster');
  } catch {
    c = null; // a failed poll hides the panel rather than show stale members
  }
  const before = JSON.stringify(view && view.members);
  view = c;
  renderSummary();
  renderPanel();
  if (JSON.stringify(view && view.members) !== before) onChange();
}

function renderSummary() {
  const box = $('#cluster');
  if (!view) {
    box.textContent = '';
    return;
  }
  const members = view.members || [];
  const alive = members.filter((m) => m.status === 'alive').length;
  box.textContent = `node ${shortNode(view.node)} · leader ${shortNode(view.leader) || '–'} · ${alive}/${members.length} members alive`;
  box.title = `node ${view.node}, leader ${view.leader || 'none'}`;
}

function renderPanel() {
  const panel = $('#cluster-panel');
  panel.hidden = !view;
  if (!view) return;
  const c = view;
  const lease = c.lease || {};
  const leaseText = !lease.until ? 'never held' : lease.valid ? `valid until ${fmtTime(lease.until)}` : `lapsed at ${fmtTime(lease.until)}`;
  const state = $('#cluster-state');
  state.textContent = `term ${c.term} · applied index ${c.applied_index ?? '–'} · lease ${leaseText}`;
  state.dataset.lease = lease.valid ? 'valid' : 'lapsed';
  const total = c.partitions || 0;
  const unassigned = c.unassigned || 0;
  $('#cluster-parts').textContent = `${total} partitions${unassigned ? `, ${unassigned} unassigned` : ''}`;
  $('#cluster-parts').classList.toggle('warn', unassigned > 0);
  $('#members tbody').replaceChildren(
    ...(c.members || []).map((m) => {
      const isLeader = m.id === c.leader;
      const role = isLeader ? 'leader' : m.status === 'left' ? '–' : m.voter ? 'voter' : 'non-voter';
      const share = total ? (100 * (m.partitions || 0)) / total : 0;
      const labels = Object.entries(m.labels || {})
        .map(([k, v]) => `${k}=${v}`)
        .join(', ');
      return el(
        'tr',
        {
          dataset: { member: m.id, status: m.status, role, voter: String(!!m.voter), self: String(m.id === c.node) },
          class: m.id === c.node ? 'self' : '',
        },
        el(
          'td',
          { class: 'mono', title: m.id },
          shortNode(m.id),
          isLeader && el('span', { class: 'mark leader', title: 'raft leader' }, ' ★'),
          m.id === c.node && el('span', { class: 'mark self', title: 'the node that served this page' }, ' (this node)'),
        ),
        el('td', {}, el('span', { class: `badge m-${m.status}` }, m.status)),
        el('td', { class: 'small' }, role),
        el(
          'td',
          { class: 'parts', title: `${m.partitions ?? 0} of ${total} partitions` },
          el('span', { class: 'mono count' }, String(m.partitions ?? 0)),
          el('span', { class: 'share' }, bar(share)),
          el('span', { class: 'small pct' }, `${share.toFixed(1)}%`),
        ),
        el('td', { class: 'mono small' }, m.http_addr || '–'),
        el('td', { class: 'mono small' }, m.raft_addr || '–'),
        el('td', { class: 'mono small' }, labels || '–'),
      );
    }),
  );
}

// bar is the fill of a share bar, pct percent wide (set through the CSSOM, which the
// page's style policy allows whatever it says of inline style attributes).
function bar(pct) {
  const fill = el('span', { class: 'fill' });
  fill.style.width = `${pct.toFixed(1)}%`;
  return fill;
}
