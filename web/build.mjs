// Builds the web UI into ../gateway/webui/dist, which the Go package webui embeds:
//   dist/index.html, dist/terminal.html   the two pages
//   dist/assets/{dashboard,terminal}.{js,css}   bundled and minified by esbuild
// Everything but dist/.gitkeep is replaced on each build. Run it with `make web`.
import * as esbuild from 'esbuild';
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, '..', 'gateway', 'webui', 'dist');

await mkdir(dist, { recursive: true });
for (const name of await readdir(dist)) {
  if (name !== '.gitkeep') await rm(join(dist, name), { recursive: true, force: true });
}

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { dashboard: 'src/dashboard.js', terminal: 'src/terminal.js' },
  outdir: join(dist, 'assets'),
  bundle: true,
  format: 'esm',
  minify: true,
  legalComments: 'linked',
  target: ['chrome109', 'firefox115', 'safari16'],
  logLevel: 'warning',
  metafile: true,
});

for (const page of ['index.html', 'terminal.html']) {
  await copyFile(join(here, 'src', page), join(dist, page));
}

const outputs = Object.entries(result.metafile.outputs)
  .map(([f, o]) => `  ${f.slice(f.indexOf('dist/'))} ${o.bytes} B`)
  .join('\n');
console.log(`web: built ${dist}\n${outputs}`);
