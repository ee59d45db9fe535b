import { CommonError, CommonErrorCode } from '../common/common.errors';
import type { FieldError } from '../common/domain-error';

/** The events an agent posts with its task token (status and file events are the service's own). */
export const POSTED_TASK_EVENT_TYPES = ['progress', 'output', 'usage'] as const;
export type PostedTaskEventType = (typeof POSTED_TASK_EVENT_TYPES)[number];

const MAX_MESSAGE_LENGTH = 1000;
const MAX_DELTA_BYTES = 64 * 1024;
// Token counts stay far inside a bigint and exact in a double when added up.
export const MAX_TOKENS = 1e12;

/** A posted event's data, checked for its type (CONTRACT, "Agent runs"), as it is stored and streamed. */
export function checkedEventData(
  type: PostedTaskEventType,
  data: Record<string, unknown>,
): Record<string, unknown> {
  const errors: FieldError[] = [];
  const allowed = {
    progress: ['message', 'percent'],
    output: ['delta'],
    usage: ['input_tokens', 'output_tokens'],
  }[type];
  for (const name of Object.keys(data)) {
    if (!allowed.includes(name))
      errors.push({ field: `data.${name}`, message: `data.${name} is not allowed in a ${type} event` });
  }
  if (type === 'progress') {
    if (
      data.message !== undefined &&
      (typeof data.message !== 'string' || data.message.length > MAX_MESSAGE_LENGTH)
    ) {
      errors.push({
        field: 'data.message',
        message: `data.message must be a string of at most ${MAX_MESSAGE_LENGTH} characters`,
      });
    }
    if (
      data.percent !== undefined &&
      (typeof data.percent !== 'number' || !(data.percent >= 0 && data.percent <= 100))
    ) {
      errors.push({ field: 'data.percent', message: 'data.percent must be a number from 0 to 100' });
    }
  } else if (type === 'output') {
    if (typeof data.delta !== 'string' || Buffer.byteLength(data.delta) > MAX_DELTA_BYTES) {
      errors.push({ field: 'data.delta', message: 'data.delta must be a string of at most 64 KiB' });
    }
  } else {
    for (const name of ['input_tokens', 'output_tokens']) {
      const value = data[name];
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > MAX_TOKENS) {
        errors.push({ field: `data.${name}`, message: `data.${name} must be an integer of at least 0` });
      }
    }
  }
  if (errors.length) {
    throw new CommonError(CommonErrorCode.ValidationFailed, errors.map((e) => e.message).join('; '), {
      errors,
    });
  }
  return data;
}
