// Browser tests of the terminal page against the real server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  checkSequence,
  launchBrowser,
  screenshot,
  startProxy,
  startServer,
  termLines,
  typeLine,
  waitConnected,
  waitForLine,
} from './harness.mjs';

// settledOffset waits until the page's received-bytes offset stops growing.
async function settledOffset(page) {
  let last = -1;
  for (;;) {
    const off = await page.evaluate(() => window.__sg.conn.offset);
    if (off === last) return off;
    last = off;
    await new Promise((r) => setTimeout(r, 300));
  }
}

describe('terminal page', () => {
  let server;
  let browser;
  const sb = 'webterm';

  before(async () => {
    server = await startServer();
    await server.api('POST', '/v1/sandboxes', { id: sb });
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  const open = async (terminal, { base = server.base, query = `token=${server.token}` } = {}) => {
    const page = await browser.newPage();
    await page.goto(`${base}/t/${sb}/${terminal}?${query}`);
    await waitConnected(page);
    return page;
  };

  test('runs a command and shows its output', async () => {
    const page = await open('hello');
    // The token moved from the address bar into sessionStorage.
    assert.equal(new URL(page.url()).searchParams.get('token'), null);
    await typeLine(page, 'echo hello-$((6*7))');
    await waitForLine(page, 'hello-42');
    const lines = await termLines(page);
    assert.ok(lines.some((l) => l.includes('echo hello-$((6*7))')), 'the typed command is echoed');
    assert.equal(await page.locator('#state').textContent(), 'connected');
    const tr = await server.api('GET', `/v1/sandboxes/${sb}/terminals/hello`);
    assert.equal(tr.cols, await page.evaluate(() => window.__term.cols), 'the terminal was created with the fitted size');
    await typeLine(page, 'printf "\\033[1;32mgreen\\033[0m and plain\\n"; ls -la / | head -5');
    await waitForLine(page, 'green and plain');
    await screenshot(page, 'terminal.png');
    await page.close();
  });

  test('stty size follows the window size', async () => {
    const page = await open('resize');
    const check = async () => {
      const { cols, rows } = await page.evaluate(() => ({ cols: window.__term.cols, rows: window.__term.rows }));
      await typeLine(page, 'stty size');
      await waitForLine(page, `${rows} ${cols}`);
      return { cols, rows };
    };
    const first = await check();
    await page.setViewportSize({ width: 620, height: 380 });
    await page.waitForFunction((c) => window.__term.cols !== c.cols && window.__term.rows !== c.rows, first, { polling: 50 });
    const second = await check();
    assert.ok(second.cols < first.cols && second.rows < first.rows, `smaller: ${JSON.stringify({ first, second })}`);
    await page.setViewportSize({ width: 1200, height: 760 });
    await page.waitForFunction((c) => window.__term.cols > c.cols, second, { polling: 50 });
    const third = await check();
    const tr = await server.api('GET', `/v1/sandboxes/${sb}/terminals/resize`);
    assert.deepEqual({ cols: tr.cols, rows: tr.rows }, third, 'the API reports the last size');
    await page.close();
  });

  test('a cut connection resumes output exactly: every number once, in order', async () => {
    const proxy = await startProxy(server.port, server.proxyPort);
    try {
      // Enough scrollback for all 200000 lines, and a narrow window to keep it small.
      const page = await browser.newPage();
      await page.setViewportSize({ width: 420, height: 360 });
      await page.goto(`${proxy.base}/t/${sb}/drop?token=${server.token}&scrollback=210000`);
      await waitConnected(page);
      assert.equal(proxy.wsConnections, 1);
      // seq 1 200000 writes 1,488,895 bytes through the PTY (\r\n line ends), more
      // than the 1 MiB ring buffer. The proxy stops forwarding after 700,000 bytes; once
      // the page has drained what crossed, the connection is reset. The page then holds
      // at least 440,000 bytes, so the rest is still in the ring when it reconnects.
      const held = proxy.holdWebSocketAfter(700000);
      await typeLine(page, 'seq 1 200000; echo seq-done-$((40+2))');
      await held;
      const atCut = await settledOffset(page);
      proxy.cutHeld();
      assert.ok(atCut > 500000 && atCut < 1400000, `the cut came mid-stream, at offset ${atCut}`);
      await waitForLine(page, 'seq-done-42', { timeout: 120000 });
      assert.ok(proxy.wsConnections >= 2, `the page reconnected (${proxy.wsConnections} WebSocket connections)`);
      const { reconnects, offset } = await page.evaluate(() => ({ reconnects: window.__sg.conn.reconnects, offset: window.__sg.conn.offset }));
      assert.ok(reconnects >= 1, `reconnects ${reconnects}`);
      const lines = await termLines(page);
      const { count, gaps, bad, last } = checkSequence(lines);
      // On a mismatch, say how the page got there: how often it reconnected, through how
      // many proxied connections, its gap markers, and what the server logged last.
      const why = `reconnects ${reconnects}, ${proxy.wsConnections} WebSocket connections, cut at ${atCut}, gaps ${JSON.stringify(gaps)}; server log:\n${server.log().split('\n').slice(-30).join('\n')}`;
      assert.equal(bad, null, `number ${bad && bad.at}: got ${bad && bad.got}, want ${bad && bad.want}; ${why}`);
      // A marker ending after the cut would mean the resume lost output.
      assert.ok(gaps.every((g) => g.to <= atCut), `a gap from the cut on; ${why}`);
      assert.equal(last, 200000, `the last number; ${why}`);
      if (gaps.length === 0) {
        assert.equal(count, 200000, `numbers seen; ${why}`);
      } else {
        console.log(`# the page fell behind the ring while streaming: gaps ${JSON.stringify(gaps)}; resume checked from offset ${atCut}`);
      }
      const tr = await server.api('GET', `/v1/sandboxes/${sb}/terminals/drop`);
      assert.ok(offset <= tr.output_offset, `page offset ${offset} <= server offset ${tr.output_offset}`);
      await page.close();
    } finally {
      await proxy.close();
    }
  });

  test('output lost while away is marked, and the rest follows in order', async () => {
    const proxy = await startProxy(server.port, server.proxyPort);
    try {
      const page = await browser.newPage();
      await page.setViewportSize({ width: 420, height: 360 });
      await page.goto(`${proxy.base}/t/${sb}/lost?token=${server.token}&scrollback=210000`);
      await waitConnected(page);
      // Stop the page's connection early, let all 1,488,895 bytes pass through the
      // 1 MiB ring, then cut: what the page asks for on reconnect is gone.
      const held = proxy.holdWebSocketAfter(20000);
      await typeLine(page, 'seq 1 200000; echo lost-done-$((40+2))');
      await held;
      for (let i = 0; ; i++) {
        const tr = await server.api('GET', `/v1/sandboxes/${sb}/terminals/lost`);
        if (tr.output_offset > 1488895) break;
        assert.ok(i < 300, `the terminal's output stalled at ${tr.output_offset}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      proxy.cutHeld();
      await waitForLine(page, 'lost-done-42', { timeout: 120000 });
      const lines = await termLines(page);
      const at = lines.findIndex((l) => l.includes('bytes of output lost'));
      assert.ok(at > 0, 'a gap marker is shown');
      const m = /\[ (\d+) bytes of output lost: offset (\d+) to (\d+) \]/.exec(lines[at]);
      assert.ok(m, lines[at]);
      assert.equal(Number(m[1]), Number(m[3]) - Number(m[2]));
      // About total - ring - what the page had got; bytes already in flight in socket
      // buffers when the proxy held the connection make it vary, so only its order of
      // magnitude is checked.
      assert.ok(Number(m[1]) > 100000 && Number(m[1]) < 1488895, `lost ${m[1]} bytes`);
      const numbers = (ls) => ls.filter((l) => /^\d+$/.test(l.trim())).map((l) => Number(l.trim()));
      // The connection may stop mid-line: the last line before the marker can be the
      // start of the next number.
      const before = numbers(lines.slice(0, at));
      const last = before.pop();
      before.forEach((n, i) => assert.equal(n, i + 1, 'before the gap: 1, 2, 3, ...'));
      assert.ok(String(before.length + 1).startsWith(String(last)), `last line before the gap: ${last}`);
      // The ring may start mid-line: skip the first line after the marker.
      const after = numbers(lines.slice(at + 2));
      assert.ok(after.length > 100000, `${after.length} numbers after the gap`);
      after.forEach((n, i) => assert.equal(n, after[0] + i, 'after the gap: consecutive'));
      assert.equal(after[after.length - 1], 200000);
      await page.close();
    } finally {
      await proxy.close();
    }
  });

  test('two pages on one terminal both see input from either', async () => {
    const a = await open('shared');
    const b = await open('shared');
    await typeLine(a, 'echo from-a-$((1+1))');
    await waitForLine(a, 'from-a-2');
    await waitForLine(b, 'from-a-2');
    await typeLine(b, 'echo from-b-$((2+2))');
    await waitForLine(b, 'from-b-4');
    await waitForLine(a, 'from-b-4');
    const tr = await server.api('GET', `/v1/sandboxes/${sb}/terminals/shared`);
    assert.equal(tr.attached, 2);
    await a.close();
    await b.close();
  });

  test('a page opened late replays the earlier output', async () => {
    const a = await open('replay');
    await typeLine(a, 'echo before-$((3*3))');
    await waitForLine(a, 'before-9');
    await a.close();
    const b = await open('replay');
    await waitForLine(b, 'before-9');
    await b.close();
  });

  test('shows the exit status when the shell ends', async () => {
    const page = await open('exit');
    await typeLine(page, 'exit 3');
    await page.waitForFunction(() => window.__sg.conn.state === 'exited', null, { polling: 50 });
    assert.equal(await page.locator('#state').textContent(), 'exited');
    assert.match(await page.locator('#detail').textContent(), /exit code 3/);
    assert.equal(await page.locator('#restart').isVisible(), true);
    await page.close();
  });

  test('asks for the token when the URL has none', async () => {
    // A new tab starts with empty sessionStorage.
    const page = await browser.newPage();
    await page.goto(`${server.base}/t/${sb}/login`);
    await page.locator('.login input[name=token]').waitFor();
    await page.locator('.login input[name=token]').fill(server.token);
    await page.locator('.login button[type=submit]').click();
    await waitConnected(page);
    await typeLine(page, 'echo signed-$((1+2))-in');
    await waitForLine(page, 'signed-3-in');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('sandgate.token')), server.token);
    await page.close();
  });

  test('copy and paste', async () => {
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.base });
    const page = await open('clip');
    await typeLine(page, 'echo clip-$((5*5))');
    await waitForLine(page, 'clip-25');
    // Select the output line and copy it with Ctrl+Shift+C.
    const row = await page.evaluate(() => {
      const b = window.__term.buffer.active;
      for (let i = b.length - 1; i >= 0; i--) if (b.getLine(i).translateToString(true) === 'clip-25') return i;
      return -1;
    });
    assert.ok(row >= 0);
    await page.evaluate((r) => window.__term.select(0, r, 7), row);
    await page.locator('#term .xterm').focus();
    await page.keyboard.press('Control+Shift+C');
    await page.waitForFunction(async () => (await navigator.clipboard.readText()) === 'clip-25', null, { polling: 100, timeout: 5000 });
    // Paste it back with the Paste button, as a command argument.
    await page.locator('#term .xterm').click();
    await page.keyboard.type('echo pasted-');
    await page.locator('#paste').click();
    // The paste is asynchronous (clipboard read): wait for it to reach the shell's line.
    await page.waitForFunction(() => {
      const b = window.__term.buffer.active;
      for (let i = 0; i < b.length; i++) if (b.getLine(i).translateToString(true).endsWith('echo pasted-clip-25')) return true;
      return false;
    }, null, { polling: 50 });
    await page.locator('#term .xterm').click();
    await page.keyboard.press('Enter');
    await waitForLine(page, 'pasted-clip-25');
    await page.close();
  });
});
