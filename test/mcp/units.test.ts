import { expect } from 'chai';
import { classify, McpTransportFailure, redactor } from '../../src/mcp/errors';
import { toCallToolResult } from '../../src/mcp/results';
import { eventData, SseEventSplitter } from '../../src/mcp/sse-events';
import { connectFailure } from '../../src/mcp/transport-fetch';

describe('MCP client pieces (pure)', () => {
  describe('SseEventSplitter', () => {
    const split = (...chunks: string[]) => {
      const s = new SseEventSplitter();
      return chunks.flatMap((c) => s.push(Buffer.from(c))).map((e) => eventData(e));
    };

    it('ends an event at a blank line, with LF, CRLF or CR line ends', () => {
      expect(split('data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n')).to.deep.equal(['a', 'b', 'c']);
    });

    it('finds events split anywhere across chunks', () => {
      const text = 'event: message\ndata: {"x":1}\r\n\r\ndata: two\ndata: lines\n\n';
      for (let cut = 1; cut < text.length; cut++) {
        expect(split(text.slice(0, cut), text.slice(cut)), `cut at ${cut}`).to.deep.equal(['{"x":1}', 'two\nlines']);
      }
    });

    it('counts the bytes of the event not yet complete', () => {
      const s = new SseEventSplitter();
      s.push(Buffer.from('data: done\n\ndata: 12345'));
      expect(s.pendingBytes).to.equal('data: 12345'.length);
    });

    it('gives no data for a priming event or a comment', () => {
      expect(split('id: 1\ndata:\n\n: keep-alive\n\n')).to.deep.equal([undefined, undefined]);
    });
  });

  describe('toCallToolResult', () => {
    it('adds structured content as JSON text when no text item mirrors it', () => {
      expect(toCallToolResult({ content: [{ type: 'text', text: 'summary' }], structuredContent: { a: [1, 2] } }, { maxChars: 1000 }).content).to.deep.equal([
        { type: 'text', text: 'summary' },
        { type: 'text', text: '{"a":[1,2]}' },
      ]);
    });

    it('does not repeat structured content that a text item already carries (whatever its formatting)', () => {
      const result = toCallToolResult({ content: [{ type: 'text', text: '{\n  "a": [1, 2]\n}' }], structuredContent: { a: [1, 2] } }, { maxChars: 1000 });
      expect(result.content).to.have.length(1);
    });

    it('keeps isError', () => {
      expect(toCallToolResult({ content: [{ type: 'text', text: 'bad input' }], isError: true }, { maxChars: 1000 })).to.deep.equal({ content: [{ type: 'text', text: 'bad input' }], isError: true });
    });

    it('cuts the result at maxChars, saying so, and drops what follows', () => {
      const result = toCallToolResult({ content: [{ type: 'text', text: 'x'.repeat(80) }, { type: 'text', text: 'y'.repeat(80) }, { type: 'text', text: 'z' }] }, { maxChars: 100 });
      expect(result.content).to.have.length(2);
      expect((result.content[1] as { text: string }).text).to.match(/^y{20}\n\[… the result is over 100 characters: cut here, 1 more item\(s\) dropped\]$/);
    });

    it('bounds an embedded text resource', () => {
      const result = toCallToolResult({ content: [{ type: 'resource', resource: { uri: 'file:///big', text: 'b'.repeat(70_000) } }] }, { maxChars: 1_000_000 });
      const text = (result.content[0] as { text: string }).text;
      expect(text.length).to.be.lessThan(66 * 1024);
      expect(text).to.match(/cut: 70000 characters in all/);
    });
  });

  describe('errors', () => {
    it('removes header values, and each long word of one, from a text', () => {
      const redact = redactor({ Authorization: 'Bearer sk-abcdef123456', 'X-Api-Key': 'key-98765', 'X-Version': '2' });
      expect(redact('sent Bearer sk-abcdef123456, or sk-abcdef123456 alone, and key-98765 (version 2)')).to.equal(
        'sent [redacted], or [redacted] alone, and [redacted] (version 2)',
      );
    });

    it('tells DNS, refused, TLS and lost connections apart, with whether the request could have been sent', () => {
      const url = new URL('https://mcp.example.com/mcp?key=secret');
      const of = (code: string) => {
        const f = connectFailure(Object.assign(new TypeError('fetch failed'), { code: 'UND_ERR_SOCKET', cause: Object.assign(new Error('x'), { code }) }), url);
        return [f.reason, f.reachedServer];
      };
      expect(of('ENOTFOUND')).to.deep.equal(['dns', false]);
      expect(of('EAI_AGAIN')).to.deep.equal(['dns', false]);
      expect(of('ECONNREFUSED')).to.deep.equal(['refused', false]);
      expect(of('ERR_SSL_WRONG_VERSION_NUMBER')).to.deep.equal(['tls', false]);
      expect(of('DEPTH_ZERO_SELF_SIGNED_CERT')).to.deep.equal(['tls', false]);
      expect(of('ECONNRESET')).to.deep.equal(['lost', true]);
      expect(connectFailure(new Error('x'), url).message).not.to.include('secret');
    });

    it('keeps the reason and reachedServer of a transport failure found among the causes', () => {
      const cause = new McpTransportFailure('refused', false, 'connection refused');
      expect(classify(new TypeError('fetch failed', { cause }), { inSession: true })).to.deep.equal({ reason: 'refused', reachedServer: false, message: 'connection refused' });
    });
  });
});
