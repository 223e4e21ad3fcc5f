// The terminal page, /t/{sandbox}/{terminal}: one xterm.js terminal attached to one
// terminal of the API through a TermConn.
//
// Query parameters: token (moved to sessionStorage at once), scrollback (lines kept,
// default 10000, at most 1000000).
//
// For tests and the console, window.__term is the xterm Terminal and window.__sg holds
// the connection (offset, state, reconnects) and the fit function.

import '@xterm/xterm/css/xterm.css';
import './style.css';
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { api, enc, login, logout, sandboxPath, takeTokenFromURL, withToken, wsURL, getToken } from './api.js';
import { TermConn, exitText } from './termconn.js';

takeTokenFromURL();

const parts = location.pathname.split('/').filter(Boolean);
const sandbox = decodeURIComponent(parts[1] || '');
const terminalID = decodeURIComponent(parts[2] || '');
const params = new URLSearchParams(location.search);
const scrollback = clampInt(params.get('scrollback'), 10000, 0, 1000000);

const $ = (sel) => document.querySelector(sel);
$('#title').textContent = `${sandbox} / ${terminalID}`;
document.title = `${terminalID} · ${sandbox} — sandgate`;

const term = new Terminal({
  scrollback,
  cursorBlink: true,
  fontFamily: '"DejaVu Sans Mono", "Menlo", "Consolas", "Liberation Mono", monospace',
  fontSize: 14,
  theme: { background: '#101418', foreground: '#d8dee4', cursor: '#f0c674', selectionBackground: '#3a4b5c' },
});
const fit = new FitAddon();
term.loadAddon(fit);
term.open($('#term'));
fitNow();

const tpath = `${sandboxPath(sandbox)}/terminals/${enc(terminalID)}`;

const conn = new TermConn({
  sandbox,
  terminal: terminalID,
  api: {
    put: (size) => api('PUT', tpath, { cols: size.cols, rows: size.rows }),
    probe: () => fetch(tpath, { headers: authHeaders(), cache: 'no-store' }),
  },
  paths: { ws: (offset) => wsURL(withToken(`${tpath}/ws`, { offset })) },
  size: () => ({ cols: term.cols, rows: term.rows }),
  on: {
    output: (bytes) => term.write(bytes),
    gap: (from, to) => term.write(`\r\n\x1b[0;30;43m[ ${to - from} bytes of output lost: offset ${from} to ${to} ]\x1b[0m\r\n`),
    exit: (msg) => {
      term.write(`\r\n\x1b[0;2m[ shell ended: ${exitText(msg)} ]\x1b[0m\r\n`);
      $('#restart').hidden = false;
    },
    restarted: () => term.write('\r\n\x1b[0;30;46m[ a new shell was started for this terminal ]\x1b[0m\r\n'),
    state: showState,
    error: (err) => console.warn('sandgate terminal:', err),
    login: () => login('The server wants an API token.'),
  },
});

window.__term = term;
window.__sg = { conn, fit: fitNow, sandbox, terminal: terminalID };

term.onData((data) => {
  if (!conn.send(data)) flash();
});
term.onBinary((data) => {
  const b = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) b[i] = data.charCodeAt(i) & 0xff;
  if (!conn.send(b)) flash();
});
term.onResize(({ cols, rows }) => {
  $('#size').textContent = `${cols}×${rows}`;
  conn.resize();
});
term.onTitleChange((title) => {
  document.title = title ? `${title} — sandgate` : `${terminalID} · ${sandbox} — sandgate`;
});

// Copy and paste: Ctrl+Shift+C copies the selection and Ctrl+Shift+V pastes (the browser's
// paste event, which xterm turns into input); plain Ctrl+C stays the shell's interrupt.
// On macOS Cmd+C and Cmd+V work as in any page.
term.attachCustomKeyEventHandler((ev) => {
  if (ev.type !== 'keydown' || !ev.ctrlKey || !ev.shiftKey || ev.altKey || ev.metaKey) return true;
  const k = ev.key.toLowerCase();
  if (k === 'c') {
    ev.preventDefault(); // Chrome would open the element inspector
    copySelection();
    return false;
  }
  if (k === 'v') return false; // let the browser paste into xterm's textarea
  return true;
});

$('#copy').addEventListener('click', () => {
  copySelection();
  term.focus();
});
$('#paste').addEventListener('click', async () => {
  try {
    const text = await navigator.clipboard.readText();
    if (text) term.paste(text);
  } catch {
    showNote('The browser did not allow reading the clipboard: use Ctrl+Shift+V.');
  }
  term.focus();
});
$('#restart').addEventListener('click', () => {
  $('#restart').hidden = true;
  conn.restart();
  term.focus();
});
$('#logout').addEventListener('click', () => {
  logout();
  location.reload();
});
$('#logout').hidden = !getToken();

let resizeFrame = 0;
function scheduleFit() {
  if (resizeFrame) return;
  resizeFrame = requestAnimationFrame(() => {
    resizeFrame = 0;
    fitNow();
  });
}
window.addEventListener('resize', scheduleFit);
new ResizeObserver(scheduleFit).observe($('#term'));

function fitNow() {
  try {
    fit.fit();
  } catch {
    // Not laid out yet.
  }
  $('#size').textContent = `${term.cols}×${term.rows}`;
}

async function copySelection() {
  const text = term.getSelection();
  if (!text) {
    showNote('Nothing selected.');
    return;
  }
  try {
    await navigator.clipboard.writeText(text);
    showNote('Copied.');
  } catch {
    // Not a secure context: fall back to a hidden textarea.
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.appendChild(ta);
    ta.select();
    const ok = document.execCommand('copy');
    ta.remove();
    showNote(ok ? 'Copied.' : 'The browser refused to copy.');
  }
}

const stateLabels = {
  idle: 'idle',
  connecting: 'connecting',
  open: 'connected',
  reconnecting: 'reconnecting',
  exited: 'exited',
  gone: 'not found',
  auth: 'signed out',
};

function showState(name, detail) {
  const s = $('#state');
  s.dataset.state = name;
  s.textContent = stateLabels[name] || name;
  $('#detail').textContent = detail || '';
  document.body.dataset.state = name;
  $('#logout').hidden = !getToken();
}

let noteTimer = 0;
function showNote(text) {
  const n = $('#note');
  n.textContent = text;
  clearTimeout(noteTimer);
  noteTimer = setTimeout(() => {
    n.textContent = '';
  }, 2500);
}

function flash() {
  const s = $('#state');
  s.classList.remove('flash');
  void s.offsetWidth;
  s.classList.add('flash');
}

function authHeaders() {
  const t = getToken();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

function clampInt(v, def, min, max) {
  const n = Number.parseInt(v ?? '', 10);
  if (!Number.isFinite(n)) return def;
  return Math.min(max, Math.max(min, n));
}

if (!sandbox || !terminalID) {
  showState('gone', 'the address should be /t/{sandbox}/{terminal}');
} else {
  conn.start();
  term.focus();
}
