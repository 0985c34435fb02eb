import net from 'node:net';

/**
 * The operator's network rules, parsed once from NETWORK_BLOCKLIST and an allow list (NETWORK_ALLOWLIST for servlets,
 * WEBHOOK_ALLOWLIST for webhooks, MCP_ALLOWLIST for MCP servers).
 * The built-in blocklist (address-guard.ts) always applies; these entries add to it or open holes in it.
 */
export interface NetworkPolicy {
  /** Configured CIDRs and addresses: refused even when the allow list names them (deny wins). */
  blockedAddresses: net.BlockList;
  blockedHosts: HostPattern[];
  blockedUrlPrefixes: UrlPrefix[];
  /** Let through although the built-in blocklist refuses them. */
  allowedAddresses: net.BlockList;
  allowedHosts: HostPattern[];
}

export interface HostPattern {
  pattern: string;
  regex: RegExp;
}

export interface UrlPrefix {
  prefix: string;
  origin: string;
  /** Decoded, lower-cased path with duplicate slashes collapsed (see normalizedPath). */
  path: string;
}

const HOST_GLOB = /^[a-z0-9*_.-]+$/;

/** Throws an Error listing every entry it cannot read (the worker then refuses to start). */
export function parseNetworkPolicy(lists: { blocklist: string[]; allowlist: string[] }): NetworkPolicy {
  const policy: NetworkPolicy = {
    blockedAddresses: new net.BlockList(),
    blockedHosts: [],
    blockedUrlPrefixes: [],
    allowedAddresses: new net.BlockList(),
    allowedHosts: [],
  };
  const problems: string[] = [];
  for (const entry of lists.blocklist) {
    if (entry.includes('://')) {
      const prefix = parseUrlPrefix(entry);
      if (prefix) policy.blockedUrlPrefixes.push(prefix);
      else problems.push(`NETWORK_BLOCKLIST: "${entry}" is not an http(s) URL prefix`);
    } else if (!addAddressRule(policy.blockedAddresses, entry)) {
      const host = hostPattern(entry);
      if (host) policy.blockedHosts.push(host);
      else problems.push(`NETWORK_BLOCKLIST: "${entry}" is not a host name, host glob, URL prefix or CIDR`);
    }
  }
  for (const entry of lists.allowlist) {
    if (addAddressRule(policy.allowedAddresses, entry)) continue;
    const host = entry.includes('://') ? undefined : hostPattern(entry);
    if (host) policy.allowedHosts.push(host);
    else problems.push(`NETWORK_ALLOWLIST: "${entry}" is not a host name, host glob or CIDR`);
  }
  if (problems.length > 0) throw new Error(`Invalid network policy:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return policy;
}

/** The policy with no configured entries: only the built-in blocklist. */
export const DEFAULT_POLICY: NetworkPolicy = parseNetworkPolicy({ blocklist: [], allowlist: [] });

/** Host names as compared everywhere: lower case, no trailing dot (`evil.internal.` is `evil.internal`). */
export function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/\.+$/, '');
}

/** `*` matches any run of characters, dots included: `*.internal` matches `a.b.internal` but not `internal`. */
export function hostPattern(glob: string): HostPattern | undefined {
  const pattern = normalizeHost(glob.trim());
  if (!pattern || !HOST_GLOB.test(pattern)) return undefined;
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\-]/g, '\\$&'))
    .join('.*');
  return { pattern, regex: new RegExp(`^${source}$`) };
}

export function matchesAnyHost(host: string, patterns: HostPattern[]): HostPattern | undefined {
  const h = normalizeHost(host);
  return patterns.find((p) => p.regex.test(h));
}

/**
 * An install's `domains`: null or containing "*" = every host outside the blocklist; a list of globs narrows
 * that; an empty list = no network at all.
 */
export function domainsAllow(host: string, domains: string[] | null): boolean {
  if (domains === null || domains.includes('*')) return true;
  const patterns = domains.map(hostPattern).filter((p): p is HostPattern => p !== undefined);
  return matchesAnyHost(host, patterns) !== undefined;
}

/**
 * The path as a server would likely read it, so `/%61dmin`, `//admin` and `/ADMIN` cannot slip past a blocked
 * `/admin` prefix.
 */
export function normalizedPath(pathname: string): string {
  let decoded = pathname;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    // keep the raw path: a malformed escape cannot be decoded by the server either
  }
  return decoded.toLowerCase().replace(/\/{2,}/g, '/');
}

function parseUrlPrefix(entry: string): UrlPrefix | undefined {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return { prefix: entry, origin: url.origin, path: normalizedPath(url.pathname) };
}

/** Adds `entry` as an address or CIDR; false when it is neither. */
function addAddressRule(list: net.BlockList, entry: string): boolean {
  const [address, bits, extra] = entry.split('/');
  if (extra !== undefined || !address) return false;
  const family = net.isIP(address);
  if (family === 0) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (bits === undefined) {
    list.addAddress(address, type);
    return true;
  }
  const prefix = Number(bits);
  if (!/^\d+$/.test(bits) || prefix > (family === 4 ? 32 : 128)) return false;
  list.addSubnet(address, prefix, type);
  return true;
}
