import { expect } from 'chai';
import { checkMcpUrl, mcpNetworkPolicy } from '../../src/mcp/policy';

/**
 * Which MCP server URLs an install lets through, checked with the pure guard the API asks before it connects (no
 * URL here is ever connected to: the API's own tests use loopback servers only).
 */
describe('MCP installs: URLs through the network guard', () => {
  const verdict = (url: string, lists: { NETWORK_BLOCKLIST?: string[]; MCP_ALLOWLIST?: string[] } = {}) =>
    checkMcpUrl(new URL(url), mcpNetworkPolicy({ NETWORK_BLOCKLIST: lists.NETWORK_BLOCKLIST ?? [], MCP_ALLOWLIST: lists.MCP_ALLOWLIST ?? [] }));

  it('lets https:// to a public host through, and refuses http:// to a host MCP_ALLOWLIST does not name', () => {
    expect(verdict('https://mcp.example.com/mcp').allowed).to.equal(true);
    expect(verdict('https://203.0.114.7/mcp').allowed).to.equal(true);
    const http = verdict('http://mcp.example.com/mcp');
    expect(http.allowed).to.equal(false);
    expect(http.reason).to.match(/http:\/\/ is allowed only for hosts in MCP_ALLOWLIST/);
  });

  it('refuses private, link-local (cloud metadata) and other built-in blocked addresses, naming MCP_ALLOWLIST as the way out', () => {
    for (const url of ['https://10.0.0.5/mcp', 'https://169.254.169.254/latest', 'https://192.168.1.1/', 'https://[fd00:ec2::254]/', 'https://[::ffff:10.0.0.5]/', 'https://100.64.0.1/']) {
      const v = verdict(url);
      expect(v.allowed, url).to.equal(false);
      expect(v.reason, url).to.match(/; to allow it, add the host to MCP_ALLOWLIST$/);
    }
  });

  it('lets MCP_ALLOWLIST lift the built-in blocklist and allow http:// for its hosts, but never over NETWORK_BLOCKLIST', () => {
    expect(verdict('http://10.0.0.5:8080/mcp', { MCP_ALLOWLIST: ['10.0.0.0/8'] }).allowed).to.equal(true);
    expect(verdict('https://mcp.internal/mcp', { MCP_ALLOWLIST: ['*.internal'] }).allowed).to.equal(true);
    expect(verdict('http://mcp.internal/mcp', { MCP_ALLOWLIST: ['*.internal'] }).allowed).to.equal(true);
    expect(verdict('http://10.0.0.6/mcp', { MCP_ALLOWLIST: ['10.0.0.5'] }).allowed).to.equal(false);
    const blocked = verdict('https://mcp.example.com/mcp', { NETWORK_BLOCKLIST: ['mcp.example.com'], MCP_ALLOWLIST: ['mcp.example.com'] });
    expect(blocked.allowed).to.equal(false);
    expect(blocked.reason).to.match(/NETWORK_BLOCKLIST/);
  });
});
