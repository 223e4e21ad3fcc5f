// Browser tests of the dashboard against the real server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, screenshot, startServer, waitConnected } from './harness.mjs';

describe('dashboard', () => {
  let server;
  let browser;

  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  test('lists a new sandbox and shows process.exited live', async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${server.base}/?token=${server.token}`);
    await page.locator('#no-sandboxes').waitFor();

    // A sandbox made by someone else appears without a reload.
    await server.api('POST', '/v1/sandboxes', { id: 'dash1', labels: { tenant: 'acme' } });
    const row = page.locator('#sandboxes tr[data-sandbox="dash1"]');
    await row.waitFor({ timeout: 10000 });
    assert.match(await row.textContent(), /running/);
    assert.match(await row.textContent(), /tenant=acme/);

    // Select it: its event stream starts with the replayed sandbox.created.
    await row.locator('a', { hasText: 'dash1' }).click();
    await page.locator('#events li[data-type="sandbox.created"]').waitFor();
    assert.equal(await page.locator('#events-state').textContent(), 'live');

    // A process started through the API shows up, and its exit arrives live.
    const p = await server.api('POST', '/v1/sandboxes/dash1/processes', {
      command: 'echo dash-out-$((7*6)); sleep 1.5; exit 4',
      tag: 'job',
    });
    await page.locator(`#processes tr[data-process="${p.id}"]`).waitFor();
    await page.locator('#events li[data-type="process.exited"]').waitFor({ timeout: 15000 });
    await page.locator(`#processes tr[data-process="${p.id}"][data-status="exited"]`).waitFor({ timeout: 5000 });
    assert.match(await page.locator(`#processes tr[data-process="${p.id}"]`).textContent(), /exited \(4\)/);

    // The output tail of that process.
    await page.locator(`#processes tr[data-process="${p.id}"] button`, { hasText: 'Output' }).click();
    await page.waitForFunction(() => document.querySelector('#tail').textContent.includes('dash-out-42'));
    await page.waitForFunction(() => document.querySelector('#tail-state').textContent.includes('exit code 4'));

    // Start one from the page, still running at the screenshot.
    await page.locator('#start-proc input[name=command]').fill('for i in 1 2 3; do echo tick $i; sleep 0.2; done; sleep 30');
    await page.locator('#start-proc input[name=tag]').fill('ticker');
    await page.locator('#start-proc button[type=submit]').click();
    await page.waitForFunction(() => document.querySelector('#tail').textContent.includes('tick 3'));
    await page.locator('#processes tr[data-status="running"]').waitFor();
    await screenshot(page, 'dashboard.png');
    await page.close();
  });

  test('creates and deletes a sandbox, and opens a terminal', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.base}/?token=${server.token}`);
    await page.locator('#create input[name=id]').fill('dash2');
    await page.locator('#create input[name=labels]').fill('team=web, env=test');
    await page.locator('#create button[type=submit]').click();
    const row = page.locator('#sandboxes tr[data-sandbox="dash2"]');
    await row.waitFor();
    const sbx = await server.api('GET', '/v1/sandboxes/dash2');
    assert.deepEqual(sbx.labels, { team: 'web', env: 'test' });
    // The new sandbox is selected.
    await page.locator('#sel-id', { hasText: 'dash2' }).waitFor();

    // Open a terminal from the dashboard: a new tab attached to /t/dash2/main.
    const [tab] = await Promise.all([browser.context.waitForEvent('page'), row.locator('a', { hasText: 'Terminal' }).click()]);
    await tab.waitForLoadState();
    assert.equal(new URL(tab.url()).pathname, '/t/dash2/main');
    await waitConnected(tab);
    await tab.close();
    const terms = await server.api('GET', '/v1/sandboxes/dash2/terminals');
    assert.deepEqual(terms.terminals.map((t) => t.id), ['main']);

    page.once('dialog', (d) => d.accept());
    await row.locator('button', { hasText: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    const list = await server.api('GET', '/v1/sandboxes');
    assert.ok(!list.sandboxes.some((s) => s.id === 'dash2'));
    await page.close();
  });
});
