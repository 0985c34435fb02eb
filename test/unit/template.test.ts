import { expect } from 'chai';
import { expandTemplate, isFlatTemplate } from '../../activities/template/expand';
import { TemplateFailure } from '../../activities/template/failure';

describe('prompt templates', () => {
  it('expands without HTML escaping, with nested paths and the whole payload', () => {
    const { prompt, missing } = expandTemplate('{{ a }} & {{ b.c }} / {{ @payload }}', { a: '<x & "y">', b: { c: 1 } });
    expect(prompt).to.equal('<x & "y"> & 1 / {"a":"<x & \\"y\\">","b":{"c":1}}');
    expect(missing).to.deep.equal([]);
  });

  it('names each placeholder with no value, and the section whose value is missing', () => {
    expect(expandTemplate('{{ a }} {{ gone }} {{#nothing}}{{ inner }}{{/nothing}}', { a: 'x' }).missing).to.deep.equal(['gone', 'nothing']);
  });

  it('checks a list section per item, and nothing Mustache does not render', () => {
    const items = { items: [{ name: 'a' }, { name: 'b', extra: 1 }] };
    const listed = expandTemplate('{{#items}}{{ name }};{{/items}}', items);
    expect(listed).to.deep.equal({ prompt: 'a;b;', missing: [] });
    expect(expandTemplate('{{#items}}{{ extra }}{{/items}}', items).missing, 'absent from an item and from the payload').to.deep.equal(['extra']);
    expect(expandTemplate('{{#items}}{{ name }}{{/items}}{{^items}}{{ fallback }}{{/items}}', items).missing, 'an inverted section that does not render').to.deep.equal([]);
    expect(expandTemplate('{{#off}}{{ hidden }}{{/off}}{{^off}}{{ shown }}{{/off}}', { off: false }).missing).to.deep.equal(['shown']);
  });

  it('refuses a prompt past its size limit in UTF-8 bytes, not characters', () => {
    expect(expandTemplate('{{ s }}', { s: 'é'.repeat(600) }, 1200).prompt).to.have.length(600);
    expect(() => expandTemplate('{{ s }}', { s: 'é'.repeat(601) }, 1200))
      .to.throw(TemplateFailure, 'the expanded prompt is larger than 1200 bytes (limit RUN_PROMPT_MAX_BYTES)')
      .with.property('kind', 'too_large');
  });

  it("answers a template Mustache cannot parse with Mustache's own message", () => {
    expect(() => expandTemplate('{{#a}} open', {})).to.throw(TemplateFailure, 'Unclosed section "a" at 11').with.property('kind', 'invalid');
  });

  it('tells a flat template (text, placeholders, comments, delimiter changes) from one with sections or partials', () => {
    for (const flat of ['plain text', '{{ a }} {{{ b }}} {{& c.d }} {{! note }}', '{{=<% %>=}}<% a %> {{#not-a-tag}}']) expect(isFlatTemplate(flat), flat).to.equal(true);
    for (const nested of ['{{#a}}x{{/a}}', '{{^a}}x{{/a}}', '{{> part}}', '{{=<% %>=}}<%#a%>x<%/a%>', '{{#a}} open']) expect(isFlatTemplate(nested), nested).to.equal(false);
  });
});
