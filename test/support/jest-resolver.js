/**
 * jest's resolver, with one exception: `jose` required by @a2a-js/sdk's CommonJS build. jose ships
 * ECMAScript modules only; Node 20 requires them natively (the service runs so), jest's module system
 * does not, and oidc-provider imports the same package as ESM (which must stay as it is). So the SDK's
 * `require('jose')` gets jose's own files compiled to CommonJS (TypeScript's transpiler, file by file, into
 * test/.generated/jose-cjs/, once per installed version), and everything else resolves as jest would.
 */
const fs = require('node:fs');
const path = require('node:path');
const process = require('node:process');

const SDK_DIR = `${path.sep}node_modules${path.sep}@a2a-js${path.sep}sdk${path.sep}`;
const OUT_ROOT = path.join(__dirname, '..', '.generated', 'jose-cjs');

function joseAsCommonJs(defaultResolver, options) {
  const entry = defaultResolver('jose', { ...options, conditions: ['import', 'default'] });
  const sourceDir = path.dirname(entry); // …/jose/dist/webapi
  const { version } = JSON.parse(fs.readFileSync(path.join(sourceDir, '..', '..', 'package.json'), 'utf8'));
  const outDir = path.join(OUT_ROOT, version);
  const outEntry = path.join(outDir, path.relative(sourceDir, entry));
  if (fs.existsSync(outEntry)) return outEntry;
  const ts = require('typescript');
  const staging = `${outDir}.${process.pid}.${Date.now()}`;
  const walk = (dir) => {
    for (const name of fs.readdirSync(dir)) {
      const file = path.join(dir, name);
      if (fs.statSync(file).isDirectory()) walk(file);
      else if (name.endsWith('.js')) {
        const target = path.join(staging, path.relative(sourceDir, file));
        fs.mkdirSync(path.dirname(target), { recursive: true });
        const { outputText } = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
          compilerOptions: {
            module: ts.ModuleKind.CommonJS,
            target: ts.ScriptTarget.ES2022,
            esModuleInterop: true,
          },
          fileName: file,
        });
        fs.writeFileSync(target, outputText);
      }
    }
  };
  walk(sourceDir);
  fs.writeFileSync(path.join(staging, 'package.json'), '{"type":"commonjs"}\n');
  try {
    fs.renameSync(staging, outDir); // atomic: another worker may have won; its copy is the same
  } catch {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return outEntry;
}

module.exports = (request, options) => {
  if (request === 'jose' && options.basedir.includes(SDK_DIR)) {
    return joseAsCommonJs(options.defaultResolver, options);
  }
  return options.defaultResolver(request, options);
};
