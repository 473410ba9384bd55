/**
 * Imported first by every entry point: pg-boss 12 and the rest of the stack need Node 22.12+, and an
 * older Node would fail later with an error that names none of this.
 */
const minimumNode = [22, 12] as const;

export function isSupportedNode(version: string): boolean {
  const [major, minor] = version.split('.').map(Number);
  return major > minimumNode[0] || (major === minimumNode[0] && minor >= minimumNode[1]);
}

if (!isSupportedNode(process.versions.node)) {
  console.error(
    `effects-backend needs Node ${minimumNode.join('.')} or newer; this is Node ${process.versions.node}. `
    + 'Run it through npm (`npm start`, `npm test`, `npm run <script>` use the Node 22 that `npm ci` installs into '
    + 'node_modules/.bin), or install Node 22+ on this machine.',
  );
  process.exit(1);
}
