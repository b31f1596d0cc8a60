// Bundles the extension into one file (dist/extension.js): vscode-jsonrpc is
// inlined, `vscode` is provided by the editor. Run by `npm run build`.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: ['vscode'],
  outfile: 'dist/extension.js',
  sourcemap: false,
  logLevel: 'warning',
});

// The unit tests of the extension's own logic (no editor): run by ./build.
if (process.argv.includes('--tests')) {
  const { readdirSync } = await import('node:fs');
  const tests = readdirSync('test').filter((f) => f.endsWith('.test.ts')).map((f) => `test/${f}`);
  await build({ entryPoints: tests, bundle: true, platform: 'node', target: 'node20', format: 'cjs', outdir: 'out-test', logLevel: 'warning' });
}
