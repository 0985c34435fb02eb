import { expect } from 'chai';
import { checkMcpUrl, displayUrl, mcpNetworkPolicy } from '../../src/mcp/policy';

const policy = (allow: string[] = [], block: string[] = []) => mcpNetworkPolicy({ MCP_ALLOWLIST: allow, NETWORK_BLOCKLIST: block });
const verdict = (url: string, p = policy()) => checkMcpUrl(new URL(url), p);

describe('the MCP network guard (checkMcpUrl, pure)', () => {
  it('lets https:// to a public host through', () => {
    expect(verdict('https://mcp.example.com/mcp').allowed).to.equal(true);
    expect(verdict('https://93.184.215.14/mcp').allowed).to.equal(true);
  });

  it('refuses http:// unless MCP_ALLOWLIST names the host', () => {
    const refused = verdict('http://mcp.example.com/mcp');
    expect(refused.allowed).to.equal(false);
    expect(refused.reason).to.match(/http:\/\/ is allowed only for hosts in MCP_ALLOWLIST/);
    expect(verdict('http://mcp.example.com/mcp', policy(['mcp.example.com'])).allowed).to.equal(true);
    expect(verdict('http://a.internal.example/mcp', policy(['*.internal.example'])).allowed).to.equal(true);
    expect(verdict('http://other.example/mcp', policy(['mcp.example.com'])).allowed).to.equal(false);
  });

  it('allows http:// to a literal address inside an allow-listed CIDR, and only there', () => {
    expect(verdict('http://10.1.2.3/mcp', policy(['10.1.0.0/16'])).allowed).to.equal(true);
    expect(verdict('http://10.2.0.1/mcp', policy(['10.1.0.0/16'])).allowed).to.equal(false);
  });

  for (const [url, what] of [
    ['https://10.0.0.5/mcp', /private/],
    ['https://192.168.1.1/mcp', /private/],
    ['https://169.254.169.254/latest/meta-data', /link-local/],
    ['https://[::1]/mcp', /loopback/],
    ['https://[::ffff:127.0.0.1]/mcp', /loopback/],
    ['https://[fd00:ec2::254]/mcp', /unique-local/],
    ['https://localhost/mcp', /loopback name/],
    ['https://2130706433/mcp', /loopback/],
  ] as const) {
    it(`refuses ${url} (built-in blocklist), naming MCP_ALLOWLIST as the way to allow it`, () => {
      const v = verdict(url);
      expect(v.allowed).to.equal(false);
      expect(v.reason).to.match(what);
      expect(v.reason).to.match(/MCP_ALLOWLIST/);
    });
  }

  it('lets MCP_ALLOWLIST open a private host, but never what NETWORK_BLOCKLIST names', () => {
    expect(verdict('https://10.0.0.5/mcp', policy(['10.0.0.5'])).allowed).to.equal(true);
    const blocked = verdict('https://10.0.0.5/mcp', policy(['10.0.0.5'], ['10.0.0.0/24']));
    expect(blocked.allowed).to.equal(false);
    expect(blocked.reason).to.match(/NETWORK_BLOCKLIST/);
    expect(verdict('https://mcp.evil.example/mcp', policy([], ['*.evil.example'])).allowed).to.equal(false);
  });

  it('refuses other schemes', () => {
    expect(verdict('ftp://mcp.example.com/').allowed).to.equal(false);
  });

  it('names a bad MCP_ALLOWLIST entry as such', () => {
    expect(() => policy(['https://x/'])).to.throw(/MCP_ALLOWLIST: "https:\/\/x\/"/);
  });

  it('shows a URL without user info, query string or fragment', () => {
    expect(displayUrl('https://user:pw@mcp.example.com:8443/v1/mcp?key=secret#frag')).to.equal('https://mcp.example.com:8443/v1/mcp');
  });
});
