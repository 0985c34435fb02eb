import { expect } from 'chai';
import { checkAddress, checkUrl, embeddedIpv4 } from '../../src/net/address-guard';
import { DEFAULT_POLICY, domainsAllow, parseNetworkPolicy } from '../../src/net/network-policy';

// Pure checks only: nothing here resolves a name or opens a socket.
const refused = (ip: string, policy = DEFAULT_POLICY) => checkAddress(ip, policy);
const url = (u: string, policy = DEFAULT_POLICY) => checkUrl(new URL(u), policy);

describe('servlet address guard', () => {
  describe('built-in blocklist', () => {
    const blocked: Array<[string, RegExp]> = [
      ['127.0.0.1', /loopback/],
      ['127.255.255.254', /loopback/],
      ['::1', /loopback/],
      ['0.0.0.0', /unspecified/],
      ['::', /unspecified/],
      ['10.1.2.3', /private/],
      ['172.16.0.1', /private/],
      ['172.31.255.255', /private/],
      ['192.168.1.1', /private/],
      ['169.254.169.254', /link-local.*metadata/],
      ['fd00:ec2::254', /unique-local.*metadata/],
      ['fe80::1', /link-local/],
      ['100.64.0.1', /carrier-grade NAT/],
      ['100.100.100.200', /carrier-grade NAT/],
      ['fc00::1', /unique-local/],
      ['224.0.0.1', /multicast/],
      ['239.255.255.250', /multicast/],
      ['ff02::1', /multicast/],
      ['240.0.0.1', /reserved/],
      ['255.255.255.255', /reserved or broadcast/],
      ['198.18.0.1', /benchmarking/],
      ['192.0.2.1', /documentation/],
    ];
    for (const [ip, reason] of blocked) {
      it(`refuses ${ip} and says why`, () => {
        const verdict = refused(ip);
        expect(verdict.allowed).to.equal(false);
        expect(verdict.reason).to.match(reason);
      });
    }

    it('lets public addresses through', () => {
      for (const ip of ['93.184.215.14', '1.1.1.1', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111']) {
        expect(refused(ip), ip).to.deep.equal({ allowed: true });
      }
    });

    it('refuses loopback and private addresses hidden in IPv6 forms', () => {
      for (const ip of ['::ffff:127.0.0.1', '::ffff:7f00:1', '::127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::1']) {
        expect(refused(ip).reason, ip).to.match(/loopback/);
      }
      for (const ip of ['::ffff:169.254.169.254', '64:ff9b::a9fe:a9fe']) {
        expect(refused(ip).reason, ip).to.match(/metadata/);
      }
      for (const ip of ['::ffff:0:10.0.0.1', '2002:a00:1::', '::ffff:192.168.0.1']) {
        expect(refused(ip).reason, ip).to.match(/private/);
      }
    });

    it('reads the IPv4 address embedded in mapped, NAT64 and 6to4 forms', () => {
      expect(embeddedIpv4('::ffff:7f00:1')).to.equal('127.0.0.1');
      expect(embeddedIpv4('64:ff9b::a9fe:a9fe')).to.equal('169.254.169.254');
      expect(embeddedIpv4('2002:c0a8:101::1')).to.equal('192.168.1.1');
      expect(embeddedIpv4('2606:4700::1111')).to.equal(undefined);
    });

    it('lets a public address through in its mapped form', () => {
      expect(refused('::ffff:1.1.1.1').allowed).to.equal(true);
    });

    it('refuses what is not an address', () => {
      expect(refused('localhost').allowed).to.equal(false);
    });
  });

  describe('URLs', () => {
    it('refuses loopback written as decimal, hex, short or IPv4-mapped forms (the URL parser normalizes them)', () => {
      for (const u of ['http://2130706433/', 'http://0x7f.0.0.1/', 'http://127.1/', 'http://017700000001/', 'http://[::ffff:127.0.0.1]/', 'http://[::1]:8080/']) {
        expect(url(u).allowed, u).to.equal(false);
      }
    });

    it('refuses the metadata address in any spelling', () => {
      for (const u of ['http://169.254.169.254/latest/meta-data/', 'http://2852039166/', 'http://[::ffff:a9fe:a9fe]/', 'http://[fd00:ec2::254]/']) {
        expect(url(u).allowed, u).to.equal(false);
      }
    });

    it('refuses localhost names before any lookup', () => {
      for (const u of ['http://localhost/', 'http://LOCALHOST./', 'http://api.localhost/']) {
        expect(url(u).reason, u).to.match(/loopback name/);
      }
    });

    it('allows only http and https', () => {
      for (const u of ['file:///etc/passwd', 'ftp://example.com/', 'gopher://example.com/', 'data:text/plain,hi']) {
        expect(url(u).reason, u).to.match(/scheme is not allowed/);
      }
      expect(url('https://example.com/').allowed).to.equal(true);
    });
  });

  describe('configured rules', () => {
    const policy = parseNetworkPolicy({
      blocklist: ['*.internal', 'metadata.example.org', 'https://example.com/admin', '203.0.114.0/24', '2001:4860::/32', '8.8.4.4'],
      allowlist: ['10.0.0.5', '192.168.50.0/24', 'db.corp.example', '10.9.9.9'],
    });

    it('refuses configured host names and globs, with or without a trailing dot', () => {
      for (const u of ['http://a.internal/', 'http://a.b.internal./', 'https://METADATA.example.org/']) {
        expect(url(u, policy).reason, u).to.match(/NETWORK_BLOCKLIST/);
      }
      expect(url('http://internal.example/', policy).allowed).to.equal(true);
    });

    it('refuses configured URL prefixes, also when the path is disguised', () => {
      for (const u of ['https://example.com/admin', 'https://example.com/admin/users', 'https://example.com/%61dmin', 'https://example.com//admin', 'https://example.com/x/../ADMIN']) {
        expect(url(u, policy).reason, u).to.match(/NETWORK_BLOCKLIST/);
      }
      expect(url('https://example.com/admin/secret-token', policy).reason, 'the reason names the prefix, not the path').not.to.include('secret-token');
      expect(url('https://example.com/public', policy).allowed).to.equal(true);
      expect(url('http://example.com/admin', policy).allowed, 'another origin').to.equal(true);
    });

    it('refuses configured CIDRs and addresses, IPv4 and IPv6', () => {
      for (const ip of ['203.0.114.9', '2001:4860::8888', '8.8.4.4', '::ffff:8.8.4.4']) {
        expect(checkAddress(ip, policy).reason, ip).to.match(/NETWORK_BLOCKLIST/);
      }
      expect(checkAddress('8.8.8.8', policy).allowed).to.equal(true);
    });

    it('lets allow-listed private addresses through, and nothing next to them', () => {
      expect(checkAddress('10.0.0.5', policy).allowed).to.equal(true);
      expect(checkAddress('::ffff:10.0.0.5', policy).allowed).to.equal(true);
      expect(checkAddress('192.168.50.7', policy).allowed).to.equal(true);
      expect(checkAddress('10.0.0.6', policy).allowed).to.equal(false);
      expect(checkAddress('127.0.0.1', policy).allowed).to.equal(false);
    });

    it('keeps a configured block even when the allow list names the same address', () => {
      const both = parseNetworkPolicy({ blocklist: ['10.0.0.0/24'], allowlist: ['10.0.0.5'] });
      expect(checkAddress('10.0.0.5', both).allowed).to.equal(false);
    });

    it('lists every entry it cannot read', () => {
      expect(() => parseNetworkPolicy({ blocklist: ['ftp://x/', '10.0.0.0/99', 'bad host!'], allowlist: ['https://x/'] }))
        .to.throw(/ftp:\/\/x\/[\s\S]*10\.0\.0\.0\/99[\s\S]*bad host![\s\S]*NETWORK_ALLOWLIST: "https:\/\/x\/"/);
    });
  });

  describe("an install's allowed hosts", () => {
    it('allows every host when absent or "*", none when empty, and narrows to its globs otherwise', () => {
      expect(domainsAllow('api.example.com', null)).to.equal(true);
      expect(domainsAllow('api.example.com', ['*'])).to.equal(true);
      expect(domainsAllow('api.example.com', [])).to.equal(false);
      expect(domainsAllow('api.example.com', ['*.example.com'])).to.equal(true);
      expect(domainsAllow('example.com', ['*.example.com'])).to.equal(false);
      expect(domainsAllow('evil.com', ['example.com'])).to.equal(false);
      expect(domainsAllow('example.com.evil.com', ['example.com'])).to.equal(false);
    });
  });
});
