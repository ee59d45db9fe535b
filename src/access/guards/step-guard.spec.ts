import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { AccessAttempt, AccessStep, StepOutcome } from '../access-attempt';
import { ACCESS_STEPS } from '../access-check';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import { AccessSteps } from '../access-steps';
import type { DenialRecorder } from '../denial-recorder';
import { StepGuard } from './step-guard';

/**
 * A step started alongside a pending one (AccessStep.startsAlongsidePrevious): it starts before that
 * wait ends, yet the answer is the declared order's, and what it took goes back when an earlier step
 * ends the check. Steps here are scripted; `log` is the order things happened in.
 */

let log: string[];

/** A promise with its resolve and reject at hand. */
function deferred<T>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/**
 * A step whose check answers `answer()` (a value or a promise), logging its calls; a step started
 * alongside has an undo (logged), as it must.
 */
function step(
  name: string,
  answer: () => StepOutcome | Promise<StepOutcome>,
  options: { alongside?: boolean; undo?: boolean } = {},
): AccessStep {
  return {
    check: () => {
      log.push(`check ${name}`);
      return answer();
    },
    ...((options.undo ?? options.alongside) ? { undo: () => void log.push(`undo ${name}`) } : {}),
    ...(options.alongside ? { startsAlongsidePrevious: true } : {}),
  };
}

const denial = (detail: string) => new AccessDenial(AccessDenialCode.RateLimited, detail);

/** Refusals are thrown as what DenialRecorder makes of them; an allowed request is logged. */
const denials = {
  refuse: (_attempt: AccessAttempt, refused: AccessDenial) => new Error(`refused: ${refused.detail}`),
  failed: (_attempt: AccessAttempt, error: unknown) => error,
  allow: () => void log.push('allowed'),
} as unknown as DenialRecorder;

class ThirdGuard extends StepGuard {
  constructor(rateLimit: AccessStep, credits: AccessStep, concurrency: AccessStep) {
    const other = step('other guard', () => undefined);
    const steps = new AccessSteps(ACCESS_STEPS, {
      credential: other,
      restrictions: other,
      permission: other,
      policies: other,
      rate_limit: rateLimit,
      credits,
      concurrency,
    });
    super(new Reflector(), denials, steps, ['rate_limit', 'credits', 'concurrency']);
  }
}

const context = {
  getHandler: () => context.getHandler,
  getClass: () => ThirdGuard,
  switchToHttp: () => ({ getRequest: () => ({}), getResponse: () => ({}) }),
} as unknown as ExecutionContext;

/** Lets pending promises settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

beforeEach(() => (log = []));

describe('a step that starts alongside a pending one', () => {
  it('starts before the wait ends, and the check goes on once both let the request on', async () => {
    const windows = deferred<StepOutcome>();
    const credits = deferred<StepOutcome>();
    const guard = new ThirdGuard(
      step('rate_limit', () => windows.promise),
      step('credits', () => credits.promise, { alongside: true }),
      step('concurrency', () => undefined),
    );
    const allowed = guard.canActivate(context);
    expect(log).toEqual(['check rate_limit', 'check credits']);
    credits.resolve(undefined);
    await settle();
    expect(log).toEqual(['check rate_limit', 'check credits']);
    windows.resolve(undefined);
    await expect(allowed).resolves.toBe(true);
    expect(log).toEqual(['check rate_limit', 'check credits', 'check concurrency', 'allowed']);
  });

  it('is not started early unless it says it may be', async () => {
    const windows = deferred<StepOutcome>();
    const guard = new ThirdGuard(
      step('rate_limit', () => windows.promise),
      step('credits', () => undefined),
      step('concurrency', () => undefined),
    );
    const allowed = guard.canActivate(context);
    expect(log).toEqual(['check rate_limit']);
    windows.resolve(undefined);
    await expect(allowed).resolves.toBe(true);
    expect(log).toEqual(['check rate_limit', 'check credits', 'check concurrency', 'allowed']);
  });

  it("answers the earlier step's refusal, and gives back what it took once its check settled", async () => {
    const credits = deferred<StepOutcome>();
    const guard = new ThirdGuard(
      step('rate_limit', () => Promise.resolve(denial('window spent'))),
      step('credits', () => credits.promise.then((outcome) => (log.push('credits spent'), outcome)), {
        alongside: true,
      }),
      step('concurrency', () => undefined),
    );
    const answer = guard.canActivate(context);
    await settle();
    expect(log).toEqual(['check rate_limit', 'check credits']);
    credits.resolve(undefined);
    await expect(answer).rejects.toThrow('refused: window spent');
    expect(log).toEqual(['check rate_limit', 'check credits', 'credits spent', 'undo credits']);
  });

  it("answers the earlier step's refusal over its own", async () => {
    const guard = new ThirdGuard(
      step('rate_limit', () => Promise.resolve(denial('window spent'))),
      step('credits', () => Promise.resolve(denial('no credits')), { alongside: true }),
      step('concurrency', () => undefined),
    );
    await expect(guard.canActivate(context)).rejects.toThrow('refused: window spent');
    // Its undo runs all the same: a step gives back only what it took, here nothing.
    expect(log).toEqual(['check rate_limit', 'check credits', 'undo credits']);
  });

  it("answers the earlier step's failure, and gives back what it took", async () => {
    const guard = new ThirdGuard(
      step('rate_limit', () => Promise.reject(new Error('Redis down'))),
      step('credits', () => Promise.resolve(undefined), { alongside: true }),
      step('concurrency', () => undefined),
    );
    await expect(guard.canActivate(context)).rejects.toThrow('Redis down');
    expect(log).toEqual(['check rate_limit', 'check credits', 'undo credits']);
  });

  it('answers its own refusal or failure when the earlier step let the request on', async () => {
    const refusing = new ThirdGuard(
      step('rate_limit', () => Promise.resolve(undefined)),
      step('credits', () => Promise.resolve(denial('no credits')), { alongside: true }),
      step('concurrency', () => undefined),
    );
    await expect(refusing.canActivate(context)).rejects.toThrow('refused: no credits');
    expect(log).toEqual(['check rate_limit', 'check credits']);

    log = [];
    const failing = new ThirdGuard(
      step('rate_limit', () => Promise.resolve(undefined)),
      step(
        'credits',
        () => {
          throw new Error('ledger down');
        },
        { alongside: true },
      ),
      step('concurrency', () => undefined),
    );
    await expect(failing.canActivate(context)).rejects.toThrow('ledger down');
    expect(log).toEqual(['check rate_limit', 'check credits']);
  });

  it('is undone with the steps before it when a step after both refuses', async () => {
    const guard = new ThirdGuard(
      step('rate_limit', () => Promise.resolve(undefined)),
      step('credits', () => Promise.resolve(undefined), { alongside: true }),
      step('concurrency', () => denial('too many in flight')),
    );
    await expect(guard.canActivate(context)).rejects.toThrow('refused: too many in flight');
    expect(log).toEqual(['check rate_limit', 'check credits', 'check concurrency', 'undo credits']);
  });
});
