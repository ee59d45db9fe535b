import { BlockList, isIP } from 'node:net';

/**
 * `allowed_ips` entries, parsed by one function for both uses: the request DTO accepts exactly the
 * entries this parses, and the key check compiles exactly those.
 */
export interface IpRule {
  address: string;
  /** CIDR prefix length; undefined for a single address. */
  prefix?: number;
  family: 'ipv4' | 'ipv6';
}

/** An IPv4/IPv6 address or a CIDR range whose prefix fits its family; undefined when it is neither. */
export function parseIpRule(entry: string): IpRule | undefined {
  const [address, prefix, ...rest] = entry.split('/');
  if (rest.length) return undefined;
  const version = isIP(address);
  if (!version) return undefined;
  const family = version === 6 ? 'ipv6' : 'ipv4';
  if (prefix === undefined) return { address, family };
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > (version === 6 ? 128 : 32)) return undefined;
  return { address, prefix: Number(prefix), family };
}

export const isIpRule = (entry: string): boolean => parseIpRule(entry) !== undefined;

/** Sockets report IPv4 clients on dual-stack listeners as `::ffff:a.b.c.d`; match them as IPv4. */
export function normalizeClientAddress(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped ? mapped[1] : address;
}

/** A key's `allowed_ips` compiled once into a BlockList. Entries that do not parse allow nothing. */
export function compileIpAllowList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const rule of entries.map(parseIpRule)) {
    if (!rule) continue;
    if (rule.prefix === undefined) list.addAddress(rule.address, rule.family);
    else list.addSubnet(rule.address, rule.prefix, rule.family);
  }
  return list;
}

export function ipAllowed(list: BlockList, clientAddress: string): boolean {
  const address = normalizeClientAddress(clientAddress);
  const family = isIP(address);
  if (!family) return false;
  return list.check(address, family === 6 ? 'ipv6' : 'ipv4');
}
