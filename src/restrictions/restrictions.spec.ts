import { compileIpAllowList, ipAllowed } from './ip-rules';
import { compileReferrerRules, referrerAllowed } from './referrer-rules';

describe('ip allow list', () => {
  const list = compileIpAllowList(['203.0.113.7', '10.0.0.0/8', '2001:db8::/32', '::1']);

  it.each([
    ['203.0.113.7', true],
    ['::ffff:203.0.113.7', true],
    ['203.0.113.8', false],
    ['10.255.1.2', true],
    ['11.0.0.1', false],
    ['2001:db8:1::5', true],
    ['2001:db9::1', false],
    ['::1', true],
    ['127.0.0.1', false],
    ['garbage', false],
    ['', false],
  ])('%s -> %s', (address, allowed) => {
    expect(ipAllowed(list, address)).toBe(allowed);
  });
});

describe('referrer allow list', () => {
  const rules = compileReferrerRules(['https://app.example.com/*', 'https://exact.example.com/page']);

  it.each([
    ['https://app.example.com/', true],
    ['https://app.example.com', true],
    ['https://app.example.com/deep/path?q=1', true],
    ['https://app.example.com.evil.net/', false],
    ['https://evil.net/https://app.example.com/', false],
    ['http://app.example.com/', false],
    ['https://exact.example.com/page', true],
    ['https://exact.example.com/page/more', false],
    ['https://exact.example.com/page#frag', true],
    ['not a url', false],
    [undefined, false],
  ])('%s -> %s', (referrer, allowed) => {
    expect(referrerAllowed(rules, referrer)).toBe(allowed);
  });
});
