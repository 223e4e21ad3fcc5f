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

// Three real nodes, the second and third started with --join. A build whose serve
// refuses --join skips this (saying so); one that joins must show every member in the
// panel, and a stopped member as down.
describe('cluster panel, three nodes', () => {
  const nodes = [];
  let browser;
  let refused = '';

  before(async () => {
    nodes.push(await startServer({ extraArgs: ['--node-id', 'n1'] }));
    const join = nodes[0].base.replace('http://', '');
    for (const id of ['n2', 'n3']) {
      try {
        nodes.push(await startServer({ extraArgs: ['--node-id', id, '--join', join] }));
      } catch (err) {
        if (!/--join/.test(String(err && err.message))) throw err;
        refused = String(err.message).split('\n').find((l) => l.includes('--join')) || 'serve refuses --join';
        return;
      }
    }
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    for (const n of nodes.reverse()) await n.stop();
  });

  test('shows every member, one leader, three voters sharing the partitions, and a stopped member as down', async (t) => {
    if (refused) {
      t.skip(`this build cannot form a cluster: ${refused}`);
      return;
    }
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${nodes[0].base}/?token=${nodes[0].token}`);

    // Every member alive and a voter, one leader, each owning some partitions (they
    // move onto a new member at a bounded rate) and together all of them.
    await page.waitForFunction(
      () => {
        const rows = [...document.querySelectorAll('#members tbody tr')];
        const counts = rows.map((r) => Number(r.querySelector('.count').textContent));
        return (
          rows.length === 3 &&
          rows.every((r) => r.dataset.status === 'alive' && r.dataset.voter === 'true') &&
          rows.filter((r) => r.dataset.role === 'leader').length === 1 &&
          counts.every((c) => c > 0) &&
          counts.reduce((a, b) => a + b, 0) === 4096
        );
      },
      null,
      { timeout: 120000, polling: 500 },
    );
    assert.equal(await page.locator('#members tr[data-self="true"]').getAttribute('data-member'), 'n1');
    assert.equal(await page.locator('#cluster').textContent().then((s) => s.replace(/ · leader n\d/, '')), 'node n1 · 3/3 members alive');
    await screenshot(page, 'cluster-panel-3.png');

    // Stop n3: once its lease has run out the leader marks it down (n1 and n2 keep a
    // quorum of the three voters).
    await nodes[2].stop();
    nodes.pop();
    await page.locator('#members tr[data-member="n3"][data-status="down"]').waitFor({ timeout: 60000 });
    await page.waitForFunction(() => document.querySelector('#cluster').textContent.includes('2/3 members alive'), null, {
      timeout: 15000,
    });
    await page.close();
  });
});
