import { Clock } from '../../src/common/clock';

/**
 * A clock that moves only when told: `startTestApp({ clock })` puts it in place of the app's Clock,
 * so a test can cross an hour or a midnight without waiting. Only what reads the Clock sees it (usage
 * buckets, credit refills, rate-limit windows counted in memory); everything else keeps the real time.
 */
export class ManualClock extends Clock {
  private current: number;

  constructor(start: number | Date = Date.now()) {
    super();
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  override now(): number {
    return this.current;
  }

  set(to: number | Date): void {
    this.current = typeof to === 'number' ? to : to.getTime();
  }

  advance(ms: number): void {
    this.current += ms;
  }
}
