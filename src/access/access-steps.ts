import type { AccessStep } from './access-attempt';
import type { AccessStepName } from './access-check';

/** The one registry of the key check: each name of ACCESS_STEPS and the injectable step that runs it. */
export type AccessStepMap = Readonly<Record<AccessStepName, AccessStep>>;

/** A guard's share of the key check, resolved once at start. */
export interface StepShare {
  readonly names: readonly AccessStepName[];
  readonly steps: readonly AccessStep[];
  /** Per step of the share: the steps before it in the whole check that have an `undo`, latest first. */
  readonly undo: readonly (readonly AccessStep[])[];
  /** The share ends the check: a request that passes it is allowed. */
  readonly completes: boolean;
}

/**
 * The key check's steps by name, in the declared order (AccessModule builds it from ACCESS_STEPS). A
 * guard asks for its share by name, so what runs is what ACCESS_STEPS declares; a share that is not a
 * slice of the order, in order, fails the start rather than reorder the check.
 */
export class AccessSteps {
  constructor(
    private readonly order: readonly AccessStepName[],
    private readonly byName: AccessStepMap,
  ) {}

  share(names: readonly AccessStepName[]): StepShare {
    const from = this.order.indexOf(names[0]);
    const end = from + names.length;
    if (from < 0 || names.some((name, i) => name !== this.order[from + i])) {
      throw new Error(
        `A guard asked for the steps [${names.join(', ')}], which are not in the key check's order ` +
          `[${this.order.join(', ')}] (ACCESS_STEPS and GLOBAL_GUARDS in access-check.ts).`,
      );
    }
    return {
      names,
      steps: names.map((name) => this.byName[name]),
      undo: names.map((_, i) =>
        this.order
          .slice(0, from + i)
          .map((name) => this.byName[name])
          .filter((step) => typeof step.undo === 'function')
          .reverse(),
      ),
      completes: end === this.order.length,
    };
  }
}
