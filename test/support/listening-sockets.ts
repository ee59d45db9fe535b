import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * The TCP ports a process listens on (any address, IPv4 or IPv6), read from Linux's /proc: the socket inodes
 * among its open file descriptors, matched against the kernel's table of TCP sockets in state LISTEN (0A).
 * What `ss -ltnp` shows for one pid, without depending on a tool being installed.
 */
export function listeningTcpPorts(pid: number | 'self' = 'self'): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // The descriptor closed between listing and reading it.
    }
  }
  const ports = new Set<number>();
  for (const table of [`/proc/${pid}/net/tcp`, `/proc/${pid}/net/tcp6`]) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '0A' || !inodes.has(fields[9])) continue;
      ports.add(parseInt(fields[1].split(':')[1], 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** Whether /proc can tell which sockets a process holds (Linux). */
export const canListSockets = (): boolean => existsSync('/proc/self/net/tcp');
