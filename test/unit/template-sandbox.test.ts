import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createTemplateSandbox, TemplateFailure, type TemplateSandbox } from '../../activities/template/sandbox';

/** Sections over a two-item list, 30 deep: 2^30 renderings, which never end in practice. */
const EXPONENTIAL = '{{#a}}'.repeat(30) + '{{/a}}'.repeat(30);

/** The failure an expansion ended with; fails the test when it expanded. */
async function failureOf(expansion: Promise<unknown>): Promise<TemplateFailure> {
  const outcome = await expansion.then(
    (result) => ({ result }),
    (err: unknown) => ({ err }),
  );
  expect(outcome, 'the expansion should have failed').to.have.property('err').that.is.instanceOf(TemplateFailure);
  return (outcome as { err: TemplateFailure }).err;
}

describe('the template sandbox', () => {
  let sandbox: TemplateSandbox;

  before(async () => {
    sandbox = createTemplateSandbox({ timeoutMs: 300, maxPromptBytes: 64 * 1024 });
    // Both threads started (from source each loads tsx first), so timings below are the expansions' own.
    // A section: a flat template would expand without a thread.
    await Promise.all([sandbox.expand('{{#w}}{{/w}}', {}), sandbox.expand('{{#w}}{{/w}}', {})]);
  });

  after(() => sandbox.close());

  it('expands as expandTemplate does', async () => {
    const result = await sandbox.expand('{{ a }} & {{ b.c }} {{ gone }} / {{ @payload }}', { a: '<x>', b: { c: 1 } });
    expect(result).to.deep.equal({ prompt: '<x> & 1  / {"a":"<x>","b":{"c":1}}', missing: ['gone'] });
  });

  it('stops an expansion past its time limit, while one started after it completes first', async () => {
    const settled: string[] = [];
    const stuck = failureOf(sandbox.expand(EXPONENTIAL, { a: [1, 2] })).finally(() => settled.push('stuck'));
    const quick = sandbox.expand('{{ a }}', { a: 'quick' }).finally(() => settled.push('quick'));

    expect(await quick).to.deep.equal({ prompt: 'quick', missing: [] });
    const failure = await stuck;
    expect(failure.kind).to.equal('timeout');
    expect(failure.message).to.equal('the prompt template took longer than 300 ms to expand (limit TEMPLATE_TIMEOUT_MS)');
    expect(settled).to.deep.equal(['quick', 'stuck']);
  });

  it('keeps expanding on every thread after a timeout', async () => {
    expect((await failureOf(sandbox.expand(EXPONENTIAL, { a: [1, 2] }))).kind).to.equal('timeout');
    const results = await Promise.all(['one', 'two', 'three'].map((a) => sandbox.expand('{{ a }}', { a })));
    expect(results.map((r) => r.prompt)).to.deep.equal(['one', 'two', 'three']);
  });

  it('expands a small flat template with small data at once, while every thread is stuck; anything else waits for a thread', async () => {
    const one = createTemplateSandbox({ timeoutMs: 3_000, maxPromptBytes: 1024 * 1024, threads: 1 });
    try {
      const settled: string[] = [];
      const stuck = failureOf(one.expand(EXPONENTIAL, { a: [1, 2] })).finally(() => settled.push('stuck'));
      const flat = one.expand('{{! a note }}{{ a }} {{{ b.c }}} {{=<% %>=}}<% gone %>', { a: 'x', b: { c: '<y>' } }).finally(() => settled.push('flat'));
      const section = one.expand('{{#a}}{{ . }}{{/a}}', { a: [1, 2] }).finally(() => settled.push('section'));
      const bigData = one.expand('{{ a }}', { a: 'x'.repeat(65 * 1024) }).finally(() => settled.push('big data'));
      const longTemplate = one.expand(`${'-'.repeat(16 * 1024)}{{ a }}`, { a: 'x' }).finally(() => settled.push('long template'));
      expect(await flat).to.deep.equal({ prompt: 'x <y> ', missing: ['gone'] });
      expect(settled, 'the flat one before the stuck thread is free').to.deep.equal(['flat']);
      expect((await stuck).kind).to.equal('timeout');
      expect((await section).prompt).to.equal('12');
      expect((await bigData).prompt).to.have.length(65 * 1024);
      expect((await longTemplate).prompt).to.have.length(16 * 1024 + 1);
      expect(settled.slice(0, 2)).to.deep.equal(['flat', 'stuck']);
    } finally {
      await one.close();
    }
  });

  it('stops a prompt as soon as it passes the size limit, without building the rest', async () => {
    // 100,000 copies of 64 KiB would be 6.5 GB: the thread (its heap far smaller) could only end `too_large` by
    // stopping early; a time limit generous on a busy machine keeps `timeout` from answering first.
    const roomy = createTemplateSandbox({ timeoutMs: 60_000, maxPromptBytes: 64 * 1024, threads: 1 });
    try {
      const failure = await failureOf(roomy.expand('{{#a}}{{ pad }}{{/a}}', { pad: 'x'.repeat(64 * 1024), a: new Array(100_000).fill(1) }));
      expect(failure.kind).to.equal('too_large');
      expect(failure.message).to.equal('the expanded prompt is larger than 65536 bytes (limit RUN_PROMPT_MAX_BYTES)');
    } finally {
      await roomy.close();
    }
  });

  it("answers a template Mustache cannot parse with Mustache's own message", async () => {
    const failure = await failureOf(sandbox.expand('{{#a}} open', {}));
    expect(failure.kind).to.equal('invalid');
    expect(failure.message).to.equal('Unclosed section "a" at 11');
  });

  it('fails an expansion whose thread runs out of memory with too_large, and keeps working', async function () {
    // Node 24 aborts the whole process here ("FATAL ERROR: Reached heap limit", in the thread's cleanup after it hit
    // its limit; nodejs/node#47224): the thread's memory limit contains a runaway expansion on Node 20 only.
    if (Number(process.versions.node.split('.')[0]) >= 24) this.skip();
    const small = createTemplateSandbox({ timeoutMs: 10_000, maxPromptBytes: 1024, threads: 1 });
    try {
      // The thread holds the payload twice (its copy, and `{{ @payload }}`): 200 MB, past its 129 MB.
      const failure = await failureOf(small.expand('{{ a }}', { a: 'x'.repeat(100_000_000) }));
      expect(failure.kind).to.equal('too_large');
      expect(failure.message).to.match(/^expanding the prompt template needed more than 129 MB of memory/);
      expect(await small.expand('{{ a }}', { a: 'after' })).to.deep.equal({ prompt: 'after', missing: [] });
    } finally {
      await small.close();
    }
  });

  it('ends a stuck expansion on close(), stopping its thread, so the process can exit', async () => {
    // In a process of its own: it must exit by itself, and its CPU time shows whether a thread still spins.
    const script = `
      const { createTemplateSandbox } = require(${JSON.stringify(path.resolve(__dirname, '../../activities/template/sandbox.ts'))});
      const sandbox = createTemplateSandbox({ timeoutMs: 60000, maxPromptBytes: 1024 });
      const stuck = sandbox.expand(${JSON.stringify(EXPONENTIAL)}, { a: [1, 2] }).then(() => 'expanded', (err) => err.message);
      setTimeout(async () => {
        await sandbox.close();
        console.log(await stuck);
        const before = process.cpuUsage();
        setTimeout(() => {
          const used = process.cpuUsage(before);
          console.log(Math.round((used.user + used.system) / 1000));
        }, 500);
      }, 1500);
    `;
    const started = Date.now();
    const { stdout } = await promisify(execFile)(process.execPath, ['--require', require.resolve('tsx/cjs'), '-e', script], { timeout: 20_000 });
    const [message, cpuMs] = stdout.trim().split('\n');
    expect(message).to.equal('the template sandbox was closed while the template was expanding');
    expect(Number(cpuMs), 'CPU ms used in the 500 ms after close()').to.be.below(250);
    expect(Date.now() - started, 'long before the 60 s time limit').to.be.below(15_000);
  });

  it('refuses to expand once closed', async () => {
    const closed = createTemplateSandbox({ timeoutMs: 1000, maxPromptBytes: 1024, threads: 1 });
    await closed.close();
    const outcome = await closed.expand('x', {}).then(
      () => 'expanded',
      (err: Error) => err.message,
    );
    expect(outcome).to.equal('the template sandbox is closed');
  });
});
