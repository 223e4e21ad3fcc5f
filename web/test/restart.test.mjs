// The terminal page across a restart of the server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser, startServer, termLines, typeLine, waitConnected, waitForLine } from './harness.mjs';

let server;
let browser;

before(async () => {
  server = await startServer();
  await server.api('POST', '/v1/sandboxes', { id: 'rs' });
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

test('the terminal page comes back after the server restarts', async () => {
  const page = await browser.newPage();
  await page.goto(`${server.base}/t/rs/main?token=${server.token}`);
  await waitConnected(page);
  await typeLine(page, 'echo before-restart-$((1+1))');
  await waitForLine(page, 'before-restart-2');
  const firstProcess = await page.evaluate(() => window.__sg.conn.process);
  // Record every state the page shows from here on.
  await page.evaluate(() => {
    window.__states = [];
    new MutationObserver(() => window.__states.push(document.querySelector('#state').dataset.state)).observe(
      document.querySelector('#state'),
      { attributes: true },
    );
  });

  // Running processes end with the server; the terminal's spec survives it, and the
  // page's next PUT starts a new shell for it.
  await server.restart();
  await waitConnected(page, { timeout: 30000 });
  const states = await page.evaluate(() => window.__states);
  assert.ok(states.includes('reconnecting'), `states: ${states}`);
  const secondProcess = await page.evaluate(() => window.__sg.conn.process);
  assert.notEqual(secondProcess, firstProcess, 'a new shell');
  await waitForLine(page, '[ a new shell was started for this terminal ]');

  await typeLine(page, 'echo after-restart-$((2+2))');
  await waitForLine(page, 'after-restart-4');
  const lines = await termLines(page);
  assert.ok(lines.includes('before-restart-2'), 'the earlier output stays on the page');
  await page.close();
});
