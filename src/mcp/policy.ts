import net from 'node:net';
import { checkUrl, urlHost, type Verdict } from '../net/address-guard';
import { matchesAnyHost, parseNetworkPolicy, type NetworkPolicy } from '../net/network-policy';

/**
 * The network guard for MCP servers: the built-in blocklist and NETWORK_BLOCKLIST, with MCP_ALLOWLIST (only) opening
 * holes in the built-in one. Throws an Error listing every entry it cannot read.
 */
export function mcpNetworkPolicy(config: { NETWORK_BLOCKLIST: string[]; MCP_ALLOWLIST: string[] }): NetworkPolicy {
  try {
    return parseNetworkPolicy({ blocklist: config.NETWORK_BLOCKLIST, allowlist: config.MCP_ALLOWLIST });
  } catch (err) {
    throw new Error((err as Error).message.replace(/NETWORK_ALLOWLIST/g, 'MCP_ALLOWLIST'));
  }
}

/**
 * Pure verdict on an MCP server's URL, before any name is resolved: `https://` anywhere the guard allows, `http://` only
 * to a host MCP_ALLOWLIST names (a host name or glob, or a literal address inside one of its CIDRs; a name that merely
 * resolves into such a CIDR still needs https). The pinned agent checks the resolved addresses at connection time.
 */
export function checkMcpUrl(url: URL, policy: NetworkPolicy): Verdict {
  if (url.protocol === 'http:' && !allowlistNames(urlHost(url), policy)) {
    return { allowed: false, reason: `http:// is allowed only for hosts in MCP_ALLOWLIST (${urlHost(url)} is not): use https://`, rule: 'configured' };
  }
  const verdict = checkUrl(url, policy);
  if (verdict.allowed || verdict.rule === 'configured') return verdict;
  return { ...verdict, reason: `${verdict.reason}; to allow it, add the host to MCP_ALLOWLIST` };
}

function allowlistNames(host: string, policy: NetworkPolicy): boolean {
  const family = net.isIP(host);
  if (family !== 0) return policy.allowedAddresses.check(host, family === 4 ? 'ipv4' : 'ipv6');
  return matchesAnyHost(host, policy.allowedHosts) !== undefined;
}

/** A server's URL as it may be shown and logged: no user info, no query string, no fragment (they may hold secrets). */
export function displayUrl(url: string | URL): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
}
