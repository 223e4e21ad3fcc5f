// Browser tests of the dashboard's cluster view against the real server: the members
// panel and the owning node of each sandbox.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, screenshot, startServer } from './harness.mjs';

describe('cluster panel', () => {
  let server;
  let browser;

  before(async () => {
    server = await startServer({ extraArgs: ['--labels', 'zone=a'] });
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  test('shows this node as the leader owning every partition, and as the node of its sandboxes', async () => {
    const info = await server.api('GET', '/v1/cluster');
    const id = info.node;
    // serve names a node by a UUID kept in its data directory; the page shows its
    // first 8 digits, with the whole id in the title.
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-/);
    const short = id.slice(0, 8);
    await server.api('POST', '/v1/sandboxes', { id: 'cl1' });

    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${server.base}/?token=${server.token}`);

    const row = page.locator(`#members tr[data-member="${id}"]`);
    await row.waitFor({ timeout: 15000 });
    assert.equal(await page.locator('#members tbody tr').count(), 1);
    assert.equal(await row.getAttribute('data-status'), 'alive');
    assert.equal(await row.getAttribute('data-role'), 'leader');
    assert.equal(await row.getAttribute('data-voter'), 'true');
    assert.equal(await row.getAttribute('data-self'), 'true');
    const text = await row.textContent();
    assert.match(text, /★/);
    assert.match(text, /\(this node\)/);
    assert.match(text, /4096/);
    assert.match(text, /100\.0%/);
    assert.match(text, /zone=a/);
    assert.ok(text.includes(server.base.replace('http://', '')), `the row names the HTTP address: ${text}`);
    assert.equal(await page.locator('#cluster-parts').textContent(), '4096 partitions');
    assert.match(await page.locator('#cluster-state').textContent(), /^term \d+ · applied index \d+ · lease valid until /);
    assert.equal(await page.locator('#cluster-state').getAttribute('data-lease'), 'valid');
    assert.equal(await page.locator('#cluster').textContent(), `node ${short} · leader ${short} · 1/1 members alive`);
    assert.equal(await row.locator('td').first().getAttribute('title'), id);

    // The sandbox list names the owner, known to the cluster and alive.
    const node = page.locator('#sandboxes tr[data-sandbox="cl1"] td.node');
    await node.waitFor();
    assert.equal(await node.textContent(), short);
    assert.equal(await node.getAttribute('data-node'), id);
    assert.equal(await node.getAttribute('data-node-state'), 'alive');
    await screenshot(page, 'cluster-panel.png');
    await page.close();
  });
});
