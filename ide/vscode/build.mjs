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
