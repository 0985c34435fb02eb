import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent } from 'undici';
import { checkAddress, isAllowedHost } from './address-guard';
import type { NetworkPolicy } from './network-policy';

/** Raised inside the connection's lookup; callers tell it from a failed connection (a servlet sees a 403). */
export class AddressRefusedError extends Error {
  readonly code = 'ERR_SERVLET_ADDRESS_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'AddressRefusedError';
  }
}

/**
 * A lookup that resolves every address of a name, refuses the connection if ANY of them is blocked, and hands
 * exactly the checked addresses to the socket. Because the socket connects to what was checked, a name that
 * answers differently a moment later (DNS rebinding) gains nothing. Literal IPs never reach a lookup (net skips
 * it), which is why checkUrl checks them first.
 */
export function pinnedLookup(policy: NetworkPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      if (addresses.length === 0) return callback(new AddressRefusedError(`${hostname} has no address`), '', 0);
      const hostAllowed = isAllowedHost(hostname, policy);
      for (const { address } of addresses) {
        const verdict = checkAddress(address, policy);
        if (!verdict.allowed && !(hostAllowed && verdict.rule === 'builtin')) {
          return callback(new AddressRefusedError(`${hostname} resolves to ${verdict.reason}`), '', 0);
        }
      }
      const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      if (wanted.length === 0) return callback(new AddressRefusedError(`${hostname} has no IPv${options.family} address`), '', 0);
      // net asks for all addresses when it races IPv4 and IPv6 (autoSelectFamily), for one otherwise
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, wanted);
      callback(null, wanted[0]!.address, wanted[0]!.family);
    });
  };
}

/**
 * One agent per runtime: connections are pooled per origin, and every new connection goes through the lookup.
 * undici 7 agents follow no redirects; the guarded fetch follows (and checks) them itself.
 */
export function createPinnedAgent(policy: NetworkPolicy, options: { connectTimeoutMs: number }): Agent {
  return new Agent({
    connect: { lookup: pinnedLookup(policy), timeout: options.connectTimeoutMs },
    keepAliveTimeout: 4_000,
  });
}
