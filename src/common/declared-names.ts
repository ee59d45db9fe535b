import type { OnApplicationBootstrap } from '@nestjs/common';

/** `<resource>.<verb>`, lowercase: the group is what comes before the dot (`user.*`). */
const NAME_SHAPE = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;

/**
 * Names the modules of one app declare from their `onModuleInit` (audit actions, webhook event types),
 * each with a value of its own. Fixed once the app has started, since whatever read the list at start (the
 * OpenAPI document, a validation's message) would otherwise be wrong; listed sorted, so the order never
 * depends on which module started first. One instance per app, never a process-wide list: an app without
 * an extension does not know the extension's names.
 */
export abstract class DeclaredNames<V> implements OnApplicationBootstrap {
  private readonly declared = new Map<string, V>();
  private fixed = false;

  /** What a name is, in errors: `audit action`. */
  protected abstract readonly kind: string;

  protected declareAll(entries: readonly (readonly [string, V])[]): void {
    if (this.fixed) {
      throw new Error(
        `${this.kind}s ${entries.map(([name]) => name).join(', ')} were declared after the app started: ` +
          'declare them in onModuleInit',
      );
    }
    for (const [name, value] of entries) {
      if (!NAME_SHAPE.test(name)) throw new Error(`${this.kind} "${name}" must match ${NAME_SHAPE}`);
      if (this.declared.has(name)) throw new Error(`${this.kind} "${name}" is declared twice`);
      this.declared.set(name, value);
    }
  }

  /** Every module has declared by now (onModuleInit runs before any onApplicationBootstrap). */
  onApplicationBootstrap(): void {
    this.fixed = true;
  }

  protected names(): string[] {
    return [...this.declared.keys()].sort();
  }

  protected has(name: string): boolean {
    return this.declared.has(name);
  }

  protected valueOf(name: string): V | undefined {
    return this.declared.get(name);
  }
}
