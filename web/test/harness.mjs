// Test harness for the browser tests: starts the real server binary, a headless Debian
// chromium through playwright-core, and a TCP proxy that can cut connections for real.
//
// Environment:
//   SANDGATE_BIN  the server binary (default ../../bin/sandgate, from `make build`)
//   ARTIFACTS     where screenshots go (default ../../artifacts)
//   CHROMIUM      the browser (default /usr/bin/chromium)

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const BIN = process.env.SANDGATE_BIN || path.resolve(here, '../../bin/sandgate');
export const ARTIFACTS = process.env.ARTIFACTS || path.resolve(here, '../../artifacts');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// The flags this machine needs: no sandbox as root, no GPU, and no background traffic
// to hosts that the closed network refuses.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// spawnServer starts the binary and resolves once it logs "listening on http://ADDR".
async function spawnServer(args, onLog) {
  const proc = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SANDGATE_TOKEN: '' } });
  const exited = new Promise((resolve) => proc.once('exit', (code, sig) => resolve({ code, sig })));
  let seen = '';
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not log "listening on" within 30 s:\n${seen}`)), 30000);
    const onData = (chunk) => {
      const text = chunk.toString();
      onLog(text);
      seen += text;
      const m = /listening on (http:\/\/[^\s"]+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve(m[1].replace(/\/$/, ''));
      }
    };
    // Both pipes are drained for the server's whole life, so they never fill.
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    exited.then(({ code, sig }) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? sig}) before listening:\n${seen}`));
    });
  }).catch((err) => {
    proc.kill('SIGKILL');
    throw err;
  });
  return {
    proc,
    base,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}

// startServer runs `sandgate serve` on a free loopback port with a fresh data directory
// and waits for its "listening on http://ADDR" line. stop() ends it with SIGTERM (SIGKILL
// after 10 s) and removes the directory; restart() stops it and starts it again on the
// same port and data directory. extraArgs are more serve flags (e.g. --tokens FILE).
export async function startServer({ token = 'web-test-token', extraArgs = [] } = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sandgate-web-'));
  const port = await freePort();
  const raftPort = await freePort();
  // Pages loaded through startProxy come from another origin (the proxy's port): the
  // server lets them open WebSockets as an operator would, with --allowed-origins.
  const proxyPort = await freePort();
  const args = [
    'serve',
    '--listen', `127.0.0.1:${port}`,
    '--raft-listen', `127.0.0.1:${raftPort}`,
    '--data', path.join(dir, 'data'),
    '--token', token,
    '--allowed-origins', `127.0.0.1:${proxyPort}`,
    ...extraArgs,
  ];
  let log = '';
  let run = await spawnServer(args, (text) => {
    log += text;
  }).catch(async (err) => {
    await rm(dir, { recursive: true, force: true }); // a server that never started
    throw err;
  });
  const killOnExit = () => run.proc.kill('SIGKILL');
  process.once('exit', killOnExit);

  const server = {
    base: run.base,
    port,
    proxyPort,
    token,
    log: () => log,
    async stop() {
      process.removeListener('exit', killOnExit);
      await run.stop();
      await rm(dir, { recursive: true, force: true });
    },
    async restart() {
      await run.stop();
      log += '--- restart ---\n';
      run = await spawnServer(args, (text) => {
        log += text;
      });
    },
    // api calls the REST API from the test, with the token in the header.
    async api(method, p, body) {
      const res = await fetch(server.base + p, {
        method,
        headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    },
  };
  return server;
}

// launchBrowser starts headless chromium with a fresh profile directory.
export async function launchBrowser() {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'sandgate-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1000, height: 640 },
  });
  return {
    context,
    async newPage() {
      const page = await context.newPage();
      page.on('pageerror', (err) => console.error('page error:', err));
      return page;
    },
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

// startProxy forwards 127.0.0.1:<listenPort> (server.proxyPort, an origin the server
// allows) to the server byte for byte. Pages loaded through it open their WebSockets
// through it too (they use same-origin URLs), so cutting its sockets is a real network
// failure as the page sees it.
export async function startProxy(targetPort, listenPort) {
  const conns = new Set();
  let holdRule = null; // { bytes, resolve }
  let held = null; // the connection holdWebSocketAfter stopped
  let wsConnections = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    const c = { client, upstream, ws: null, down: 0 };
    conns.add(c);
    const done = () => {
      conns.delete(c);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (d) => {
      if (c.ws === null) {
        // The first bytes hold the request line: is this a WebSocket attach?
        c.ws = /^GET \S*\/ws[?\s]/.test(d.toString('latin1', 0, Math.min(d.length, 2048)));
        if (c.ws) wsConnections++;
      }
      upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (c.cut) return;
      client.write(d);
      c.down += d.length;
      if (c.ws && holdRule && c.down >= holdRule.bytes) {
        // Stop reading from the server: the page drains what already crossed, and
        // the server's writes back up, as on a network path that went dead.
        const rule = holdRule;
        holdRule = null;
        held = c;
        upstream.pause();
        rule.resolve(c.down);
      }
    });
    client.on('error', done);
    upstream.on('error', done);
    client.on('close', done);
    upstream.on('close', done);
  });
  function cut(c) {
    c.cut = true;
    c.client.resetAndDestroy();
    c.upstream.resetAndDestroy();
    conns.delete(c);
  }
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, '127.0.0.1', resolve);
  });
  const port = server.address().port;
  return {
    base: `http://127.0.0.1:${port}`,
    get wsConnections() {
      return wsConnections;
    },
    // holdWebSocketAfter stops forwarding server bytes on the next WebSocket connection
    // once it has carried `bytes` of them; it resolves with the bytes carried.
    holdWebSocketAfter(bytes) {
      return new Promise((resolve) => {
        holdRule = { bytes, resolve };
      });
    },
    // cutHeld resets (TCP RST, both sides) the connection holdWebSocketAfter stopped.
    cutHeld() {
      if (held) cut(held);
      held = null;
    },
    // cutAll resets every connection open now.
    cutAll() {
      for (const c of [...conns]) cut(c);
    },
    async close() {
      for (const c of [...conns]) cut(c);
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

// checkSequence walks a terminal's lines that should hold the numbers 1, 2, 3, … one per
// line. A page that falls more than the ring behind the shell while it streams (a slow
// browser on a loaded machine can) is sent a gap, which it marks with a "bytes of output
// lost" line: the contract's explicit loss. Across such a marker the numbers may jump,
// and the lines beside it may hold a cut number's head or tail. Anything else out of
// order is bad. It returns how many numbers followed in order, the markers' ranges, the
// first bad number (or null) and the last number.
export function checkSequence(lines) {
  const gapOf = (l) => /bytes of output lost: offset (\d+) to (\d+)/.exec(l || '');
  const gaps = [];
  let expect = 1; // null right after a marker: the next number sets it
  let skip = false; // the line after a marker may be the tail of a cut number
  let count = 0;
  let bad = null;
  let last = 0;
  for (let i = 0; i < lines.length; i++) {
    const g = gapOf(lines[i]);
    if (g) {
      gaps.push({ from: Number(g[1]), to: Number(g[2]) });
      expect = null;
      skip = true;
      continue;
    }
    const t = lines[i].trim();
    if (!/^\d+$/.test(t)) continue;
    if (skip) {
      skip = false;
      continue;
    }
    const n = Number(t);
    const cutHead = gapOf(lines[i + 1]) && String(expect).startsWith(t);
    if (cutHead) continue;
    if (expect !== null && n !== expect) {
      bad = { at: count, got: n, want: expect };
      break;
    }
    expect = n + 1;
    last = n;
    count++;
  }
  return { count, gaps, bad, last };
}

// termLines returns the terminal's logical lines (wrapped rows joined), read through
// xterm's buffer API.
export function termLines(page) {
  return page.evaluate(() => {
    const b = window.__term.buffer.active;
    const out = [];
    let cur = null;
    for (let i = 0; i < b.length; i++) {
      const line = b.getLine(i);
      const s = line.translateToString(true);
      if (line.isWrapped && cur !== null) cur += s;
      else {
        if (cur !== null) out.push(cur);
        cur = s;
      }
    }
    if (cur !== null) out.push(cur);
    return out;
  });
}

// waitForLine waits until some logical line of the terminal equals text (after trimming
// trailing spaces).
export async function waitForLine(page, text, { timeout = 15000 } = {}) {
  await page.waitForFunction(
    (want) => {
      const b = window.__term && window.__term.buffer.active;
      if (!b) return false;
      let cur = '';
      for (let i = 0; i < b.length; i++) {
        const line = b.getLine(i);
        const s = line.translateToString(true);
        if (line.isWrapped) cur += s;
        else {
          if (cur.trimEnd() === want) return true;
          cur = s;
        }
      }
      return cur.trimEnd() === want;
    },
    text,
    { timeout, polling: 100 },
  );
}

// waitConnected waits for the terminal page's connection state to be "open".
export async function waitConnected(page, { timeout = 15000 } = {}) {
  await page.waitForFunction(() => window.__sg && window.__sg.conn.state === 'open', null, { timeout, polling: 50 });
}

// typeLine types a command into the terminal and presses Enter.
export async function typeLine(page, text) {
  await page.locator('#term .xterm').click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

export async function screenshot(page, name) {
  await mkdir(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file });
  return file;
}
