import { ConnectionHashMemo } from './connection-hash-memo';

describe('ConnectionHashMemo', () => {
  it('recalls the hash of the last value remembered on the same connection only', () => {
    const memo = new ConnectionHashMemo();
    const a = {};
    const b = {};
    expect(memo.recall(a, 'sk_one')).toBeUndefined();
    memo.remember(a, 'sk_one', 'hash-one');
    expect(memo.recall(a, 'sk_one')).toBe('hash-one');
    expect(memo.recall(b, 'sk_one')).toBeUndefined();
    // Same length, one character off; longer; shorter; a multi-byte value of the same UTF-16 length.
    expect(memo.recall(a, 'sk_onf')).toBeUndefined();
    expect(memo.recall(a, 'sk_one2')).toBeUndefined();
    expect(memo.recall(a, 'sk_on')).toBeUndefined();
    expect(memo.recall(a, 'sk_oné')).toBeUndefined();
    // A new value replaces the old one: one value per connection.
    memo.remember(a, 'sk_two', 'hash-two');
    expect(memo.recall(a, 'sk_two')).toBe('hash-two');
    expect(memo.recall(a, 'sk_one')).toBeUndefined();
  });
});
