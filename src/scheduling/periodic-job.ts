import { Inject, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';

/**
 * The one pattern for periodic jobs, on @nestjs/schedule's SchedulerRegistry (intervals come from
 * configuration, so the static decorators do not fit). A job gives its name, its interval and `run()`;
 * it runs once at start (catching up on what passed while no instance ran), then every interval,
 * never overlapping itself. A failed run is logged and the next one tries again; shutdown removes the
 * interval and waits for a run in progress.
 */
export abstract class PeriodicJob implements OnApplicationBootstrap, OnModuleDestroy {
  @Inject(SchedulerRegistry) private readonly scheduler: SchedulerRegistry;
  private readonly logger = new Logger(this.constructor.name);
  private running?: Promise<number>;

  /** Unique within the application. */
  protected abstract readonly jobName: string;
  protected abstract intervalMs(): number;
  /** One pass; returns how many things it handled. */
  protected abstract run(): Promise<number>;

  onApplicationBootstrap(): void {
    const interval = setInterval(() => void this.runOnce(), this.intervalMs());
    // The process may exit (tests, shutdown) without waiting for the next tick.
    interval.unref();
    this.scheduler.addInterval(this.jobName, interval);
    void this.runOnce();
  }

  /** Runs now, or joins the run in progress. */
  runOnce(): Promise<number> {
    this.running ??= this.run()
      .catch((error: unknown) => {
        this.logger.warn(`${this.jobName} failed: ${(error as Error).message}`);
        return 0;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /** First phase of shutdown: the database is still open to finish or hand back work. */
  async onModuleDestroy(): Promise<void> {
    if (this.scheduler.getIntervals().includes(this.jobName)) this.scheduler.deleteInterval(this.jobName);
    await this.running;
  }
}
