// Browser tests of what the dashboard shows each token: a tenant's token sees its own
// sandboxes and its tenant; the admin token sees every tenant's, with a tenant column.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, screenshot, startServer } from './harness.mjs';

const ACME = 'web-acme-token';
const GLOBEX = 'web-globex-token';

describe('tenancy', () => {
  let server;
  let browser;
  let dir;

  // as calls the API with another token than the server's admin one.
  async function as(token, method, p, body) {
    const res = await fetch(server.base + p, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'sandgate-tokens-'));
    const file = path.join(dir, 'tokens.json');
    await writeFile(file, JSON.stringify({ [ACME]: 'acme', [GLOBEX]: 'globex' }));
    server = await startServer({ extraArgs: ['--tokens', file, '--max-sandboxes-per-tenant', '5'] });
    browser = await launchBrowser();
    await as(ACME, 'POST', '/v1/sandboxes', { id: 'acme-box' });
    await as(GLOBEX, 'POST', '/v1/sandboxes', { id: 'globex-box' });
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("a tenant's page shows its tenant and only its sandboxes", async () => {
    const page = await browser.newPage();
    await page.goto(`${server.base}/?token=${ACME}`);
    await page.locator('#sandboxes tr[data-sandbox="acme-box"]').waitFor({ timeout: 10000 });
    await page.locator('#whoami[data-tenant="acme"]').waitFor({ timeout: 10000 });
    assert.match(await page.locator('#whoami').textContent(), /tenant acme · 1\/5 sandboxes/);
    assert.equal(await page.locator('#sandboxes tr[data-sandbox="globex-box"]').count(), 0);
    assert.equal(await page.locator('#tenant-col').isHidden(), true);
    // Another tenant's sandbox asked for by name is not there either: the page says it
    // is gone, as for a deleted one, and shows nothing of it.
    await page.goto(`${server.base}/#sb=globex-box`);
    await page.waitForFunction(() => /globex-box is gone/.test(document.querySelector('#status').textContent), null, {
      timeout: 10000,
    });
    await page.locator('#detail-panel').waitFor({ state: 'hidden' });
    assert.equal(await page.locator('#events li').count(), 0);
    await page.close();
  });

  test("the admin's page shows every tenant's sandboxes, with their tenant", async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 600 });
    await page.goto(`${server.base}/?token=${server.token}`);
    await page.locator('#whoami[data-admin="true"]').waitFor({ timeout: 10000 });
    const globex = page.locator('#sandboxes tr[data-sandbox="globex-box"]');
    await globex.locator('td.tenant').waitFor({ timeout: 10000 });
    assert.equal(await globex.locator('td.tenant').textContent(), 'globex');
    assert.equal(await page.locator('#sandboxes tr[data-sandbox="acme-box"] td.tenant').textContent(), 'acme');
    assert.equal(await page.locator('#tenant-col').isVisible(), true);
    await screenshot(page, 'dashboard-admin.png');
    await page.close();
  });
});
