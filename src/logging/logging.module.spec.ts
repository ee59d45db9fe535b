import { join } from 'node:path';
import { exited, spawnCaptured } from '../../test/support/child-process';

/**
 * The process's standard output as createPino writes it at info: JSON lines gathered into blocks, a
 * line waiting no longer than a moment when traffic is light, and nothing lost when the process exits
 * right after logging. Checked in a child process, whose standard output is a real pipe.
 */
const ROOT = join(__dirname, '..', '..');

/** Runs `body` in a child with createPino's logger as `logger` (its own process, its own stdout). */
function runLogging(body: string) {
  const script = `
    const fs = require('node:fs');
    // Counted before pino loads: sonic-boom calls fs.writeSync and fs.write through the module object.
    let writes = 0;
    for (const name of ['writeSync', 'write']) {
      const write = fs[name];
      fs[name] = (...args) => (writes++, write(...args));
    }
    const { createPino } = require('./src/logging/logging.module');
    createPino({ level: 'info', pretty: false }).then((logger) => { ${body} });`;
  return spawnCaptured(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH },
  });
}

const linesOf = (stdout: string): { msg: string }[] =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { msg: string });

describe('standard output (createPino at info)', () => {
  it('writes lines in blocks, and every line gathered when the process exits right after', async () => {
    const child = runLogging(`
      for (let i = 0; i < 200; i++) logger.info({ i, padding: 'x'.repeat(60) }, 'line ' + i);
      process.stderr.write('writes ' + writes + '\\n');
      logger.info('last');
      process.exit(0);`);
    const { code, stdout, stderr } = await exited(child, 20_000);
    expect(code).toBe(0);
    const lines = linesOf(stdout);
    expect(lines).toHaveLength(201);
    expect(lines.map(({ msg }) => msg).slice(-2)).toEqual(['line 199', 'last']);
    // 200 lines of about 140 bytes: 7 blocks of 4 KiB, not a write each.
    const writes = Number(/writes (\d+)/.exec(stderr)?.[1]);
    expect(writes).toBeGreaterThan(0);
    expect(writes).toBeLessThanOrEqual(10);
  });

  it('writes a lone line within a moment, while the process runs on', async () => {
    const child = runLogging(`logger.info('alone'); setTimeout(() => process.exit(0), 10000);`);
    try {
      const deadline = Date.now() + 15_000;
      while (!child.output().stdout.includes('"alone"') && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(linesOf(child.output().stdout).map(({ msg }) => msg)).toEqual(['alone']);
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });
});
