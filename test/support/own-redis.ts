import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { freeLoopbackPort } from './ports';

/**
 * A Redis server of the test's own (never the shared one), on a free loopback port, keeping nothing
 * on disk. `stop()` and `start()` simulate an outage; `pause()` and `resume()` a hang (SIGSTOP: the
 * port still accepts connections but nothing answers, as a partition or a stuck server looks);
 * `close()` belongs in a `finally`.
 */
export class OwnRedis {
  private process?: ChildProcess;

  private constructor(readonly port: number) {}

  static async start(): Promise<OwnRedis> {
    const redis = new OwnRedis(await freeLoopbackPort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    this.process = child;
    for (let i = 0; i < 100; i++) {
      const ping = spawnSync('redis-cli', ['-p', String(this.port), 'ping'], { encoding: 'utf8' });
      if (ping.stdout.trim() === 'PONG') return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`redis-server on port ${this.port} did not start`);
  }

  pause(): void {
    if (!this.running) throw new Error('redis-server is not running');
    this.process!.kill('SIGSTOP');
  }

  /** Safe in a `finally`: does nothing when the server is not running. */
  resume(): void {
    if (this.running) this.process!.kill('SIGCONT');
  }

  private get running(): boolean {
    return this.process !== undefined && this.process.exitCode === null;
  }

  async stop(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    // A paused server is resumed first, so nothing is left stopped whatever the test did.
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await once(child, 'exit');
  }

  close(): Promise<void> {
    return this.stop();
  }
}

export const hasRedisServer = (): boolean => spawnSync('redis-server', ['--version']).status === 0;
