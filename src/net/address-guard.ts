import net from 'node:net';
import { matchesAnyHost, normalizeHost, normalizedPath, type NetworkPolicy } from './network-policy';

/**
 * Pure verdicts on where a request may go (servlets, webhooks, MCP servers). Nothing here resolves names or opens sockets: the guarded
 * fetch asks `checkUrl` before every hop and `checkAddress` for every address a name resolves to.
 */
export interface Verdict {
  allowed: boolean;
  reason?: string;
  /** Which rule refused: the allow list may override only the built-in ones. */
  rule?: 'builtin' | 'configured';
}

const BUILTIN_V4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'an unspecified ("this network") address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address (cloud metadata lives here)'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol assignment address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a 6to4 relay address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved or broadcast address'],
];

const BUILTIN_V6: Array<[string, number, string]> = [
  ['::', 128, 'the unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['64:ff9b:1::', 48, 'a local-use NAT64 address'],
  ['100::', 64, 'a discard-only address'],
  ['2001::', 32, 'a Teredo tunnel address'],
  ['2001:db8::', 32, 'a documentation address'],
  ['3fff::', 20, 'a documentation address'],
  ['fc00::', 7, 'a unique-local address (cloud metadata such as fd00:ec2::254 lives here)'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
];

const builtin = [...BUILTIN_V4.map((r) => [...r, 'ipv4'] as const), ...BUILTIN_V6.map((r) => [...r, 'ipv6'] as const)].map(
  ([address, prefix, label, type]) => {
    const list = new net.BlockList();
    list.addSubnet(address, prefix, type);
    return { list, label };
  },
);

/** Refuses any loopback, private, link-local/metadata, CGNAT, ULA, multicast or reserved address, also when it is
 * embedded in an IPv6 form (mapped, compatible, NAT64, 6to4), plus the configured CIDRs; the allow list re-opens
 * built-in refusals only. */
export function checkAddress(ip: string, policy: NetworkPolicy): Verdict {
  const family = net.isIP(ip);
  if (family === 0) return { allowed: false, reason: `"${ip}" is not an IP address`, rule: 'builtin' };
  const candidates: Array<{ address: string; type: 'ipv4' | 'ipv6' }> = [{ address: ip, type: family === 4 ? 'ipv4' : 'ipv6' }];
  if (family === 6) {
    const embedded = embeddedIpv4(ip);
    if (embedded) candidates.push({ address: embedded, type: 'ipv4' });
  }
  for (const { address, type } of candidates) {
    if (policy.blockedAddresses.check(address, type)) {
      return { allowed: false, reason: `${describe(ip, address)} is blocked by NETWORK_BLOCKLIST`, rule: 'configured' };
    }
  }
  for (const { address, type } of candidates) {
    const hit = builtin.find((b) => b.list.check(address, type));
    if (!hit) continue;
    const allowed = candidates.some((c) => policy.allowedAddresses.check(c.address, c.type));
    if (!allowed) return { allowed: false, reason: `${describe(ip, address)} is ${hit.label}`, rule: 'builtin' };
  }
  return { allowed: true };
}

/**
 * URL-level rules, before any name is resolved: http/https only, configured URL prefixes and host globs,
 * `localhost` names, and literal IP addresses (the URL parser has already turned `2130706433` into `127.0.0.1`).
 */
export function checkUrl(url: URL, policy: NetworkPolicy): Verdict {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { allowed: false, reason: `the ${url.protocol.replace(/:$/, '')} scheme is not allowed (http and https only)`, rule: 'builtin' };
  }
  const path = normalizedPath(url.pathname);
  const prefix = policy.blockedUrlPrefixes.find((p) => p.origin === url.origin && path.startsWith(p.path));
  // Names the configured prefix, not the URL: a path may carry a token (webhook receivers put theirs there), and
  // the reason reaches logs, tool results and Temporal history.
  if (prefix) return { allowed: false, reason: `a URL under ${prefix.prefix} is blocked by NETWORK_BLOCKLIST`, rule: 'configured' };

  const host = urlHost(url);
  if (net.isIP(host)) return checkAddress(host, policy);
  const blocked = matchesAnyHost(host, policy.blockedHosts);
  if (blocked) return { allowed: false, reason: `host ${host} is blocked by NETWORK_BLOCKLIST (${blocked.pattern})`, rule: 'configured' };
  if ((host === 'localhost' || host.endsWith('.localhost')) && !isAllowedHost(host, policy)) {
    return { allowed: false, reason: `host ${host} is a loopback name`, rule: 'builtin' };
  }
  return { allowed: true };
}

/** Whether the allow list names this host, so that its addresses pass the built-in checks. */
export function isAllowedHost(host: string, policy: NetworkPolicy): boolean {
  return matchesAnyHost(host, policy.allowedHosts) !== undefined;
}

/** The host of a URL without IPv6 brackets or a trailing dot. */
export function urlHost(url: URL): string {
  return normalizeHost(url.hostname.replace(/^\[(.*)\]$/, '$1'));
}

function describe(ip: string, matched: string): string {
  return ip === matched ? ip : `${ip} (which embeds ${matched})`;
}

/** The IPv4 address an IPv6 address carries in a well-known embedding, if any. */
export function embeddedIpv4(ip: string): string | undefined {
  const b = ipv6Bytes(ip);
  if (!b) return undefined;
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated)
  if (zero(0, 10) && ((b[10] === 0xff && b[11] === 0xff) || (b[10] === 0 && b[11] === 0))) return v4(12);
  // ::ffff:0:a.b.c.d (translated)
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0) return v4(12);
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return v4(12);
  // 2002:aabb:ccdd::/48 (6to4)
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2);
  return undefined;
}

/** The 16 bytes of an IPv6 address (zone id ignored), or undefined when it is not one. */
export function ipv6Bytes(ip: string): number[] | undefined {
  const address = ip.replace(/%.*$/, '');
  if (net.isIPv6(address) === false) return undefined;
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const q = dotted[1]!.split('.').map(Number);
    text = text.slice(0, -dotted[1]!.length) + `${((q[0]! << 8) | q[1]!).toString(16)}:${((q[2]! << 8) | q[3]!).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parts = (s: string) => (s ? s.split(':') : []);
  const groups =
    tail === undefined ? parts(head) : [...parts(head), ...Array(8 - parts(head).length - parts(tail).length).fill('0'), ...parts(tail)];
  if (groups.length !== 8) return undefined;
  return groups.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}
