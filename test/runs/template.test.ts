import { expect } from 'chai';
import { expandTemplate } from '../../activities/template';

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
});
