import type { AccessAttempt, StepOutcome } from './access-attempt';
import { trace } from '@opentelemetry/api';
import { endWith, tracer } from '../telemetry/telemetry';

interface Step {
  check(attempt: AccessAttempt): StepOutcome | Promise<StepOutcome>;
}

/**
 * `step` whose `check` is a span `key_check.<name>` of the active trace, its refusal's code an attribute
 * (`gatehouse.denied`); its other methods are the step's own. Made only with tracing on (KeyCheck).
 */
export function tracedStep<S extends Step>(name: string, step: S): S {
  const check = (attempt: AccessAttempt): StepOutcome | Promise<StepOutcome> => {
    // A request the sampler left out is not traced: its steps make no spans either.
    if (!trace.getActiveSpan()?.isRecording()) return step.check(attempt);
    const span = tracer().startSpan(`key_check.${name}`);
    let outcome: StepOutcome | Promise<StepOutcome>;
    try {
      outcome = step.check(attempt);
    } catch (error) {
      span.recordException(error as Error);
      span.end();
      throw error;
    }
    const denied = (known: StepOutcome): StepOutcome => {
      if (known) span.setAttribute('gatehouse.denied', known.code);
      return known;
    };
    return endWith(span, outcome instanceof Promise ? outcome.then(denied) : denied(outcome));
  };
  return new Proxy(step, {
    get(target, property) {
      if (property === 'check') return check;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
