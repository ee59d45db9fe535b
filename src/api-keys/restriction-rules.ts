import { isIP } from 'node:net';

/** An IPv4/IPv6 address or a CIDR range whose prefix fits its family. */
export function isIpOrCidr(value: string): boolean {
  const [address, prefix, ...rest] = value.split('/');
  if (rest.length) return false;
  const family = isIP(address);
  if (!family) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

/** An absolute http(s) URL, optionally ending in `/*` to allow everything under it. */
export function isReferrerPattern(value: string): boolean {
  const base = value.endsWith('/*') ? value.slice(0, -1) : value;
  if (base.includes('*')) return false;
  try {
    const url = new URL(base);
    return (url.protocol === 'http:' || url.protocol === 'https:') && !url.username && !url.password;
  } catch {
    return false;
  }
}
