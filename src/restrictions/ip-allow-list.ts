import { BlockList, isIP } from 'node:net';

/** Sockets report IPv4 clients on dual-stack listeners as `::ffff:a.b.c.d`; match them as IPv4. */
export function normalizeClientAddress(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped ? mapped[1] : address;
}

/** A key's `allowed_ips` compiled once into a BlockList (addresses and CIDR ranges, v4 and v6). */
export function compileIpAllowList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return list;
}

export function ipAllowed(list: BlockList, clientAddress: string): boolean {
  const address = normalizeClientAddress(clientAddress);
  const family = isIP(address);
  if (!family) return false;
  return list.check(address, family === 6 ? 'ipv6' : 'ipv4');
}
