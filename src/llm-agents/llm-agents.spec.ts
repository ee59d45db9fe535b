import { OutputBatcher, splitUtf8 } from './output-batcher';
import { outputTokenCap } from './output-budget';
import OpenAI from 'openai';
import { OutboundError } from '../outbound/safe-http-client';
import { retryAfterMsOf, scrubbed, upstreamFailure } from './upstream-failures';

const task = (maxCredits: number, input: number, output: number) => ({
  id: 'task_x',
  organizationId: 'org_x',
  instruction: '',
  attachments: [],
  maxCredits,
  pricing: { credits_per_1k_input_tokens: input, credits_per_1k_output_tokens: output },
});

describe('llm agents', () => {
  it('caps output tokens at what the reservation pays after the estimated input', () => {
    expect(outputTokenCap(task(5, 0, 10), undefined, 'hi')).toBe(500);
    expect(outputTokenCap(task(5, 0, 0), undefined, 'hi')).toBeUndefined();
    // 4 bytes: 2 tokens + 16 of framing = 18 tokens at 1000 credits per 1k = 18 credits
    expect(outputTokenCap(task(20, 1000, 1000), undefined, 'abcd')).toBe(2);
    expect(outputTokenCap(task(0, 0, 1), undefined, 'x')).toBe(0);
  });

  it('reads Retry-After as seconds, as a date, or retry-after-ms, capped at a minute', () => {
    expect(retryAfterMsOf(new Headers({ 'retry-after': '3' }))).toBe(3000);
    expect(retryAfterMsOf(new Headers({ 'retry-after': '600' }))).toBe(60_000);
    expect(retryAfterMsOf(new Headers({ 'retry-after-ms': '250' }))).toBe(250);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMsOf(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5000);
    expect(retryAfterMsOf(new Headers())).toBeUndefined();
  });

  it('fails a run whose target the policy now refuses with target_not_allowed, at once', () => {
    const refused = new OpenAI.APIConnectionError({
      cause: new OutboundError('target_not_allowed', 'the target resolves to a non-public address'),
    });
    expect(upstreamFailure(refused, 'sk')).toMatchObject({ code: 'target_not_allowed', retryable: false });
    const reset = new OpenAI.APIConnectionError({
      cause: new OutboundError('connection_failed', 'ECONNREFUSED'),
    });
    expect(upstreamFailure(reset, 'sk')).toMatchObject({ code: 'upstream_error', retryable: true });
  });

  it('takes every occurrence of the secret out of a message', () => {
    expect(scrubbed('bad key sk-1 (sk-1)', 'sk-1')).toBe('bad key [secret] ([secret])');
  });

  it('splits output at 64 KiB of UTF-8 without cutting a character', () => {
    const pieces = splitUtf8('é'.repeat(5), 4);
    expect(pieces).toEqual(['éé', 'éé', 'é']);
  });

  it('joins deltas arriving together into one event, in order', async () => {
    const sent: string[] = [];
    const batcher = new OutputBatcher(async (delta) => void sent.push(delta));
    batcher.add('a');
    batcher.add('b');
    await new Promise((resolve) => setTimeout(resolve, 80));
    batcher.add('c');
    await batcher.finish();
    expect(sent).toEqual(['ab', 'c']);
  });
});
