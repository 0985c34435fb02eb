import { expect } from 'chai';
import { createServletRuntime, ServletError, type ServletRuntime } from '../../activities/servlets';
import { capMemory, readU32, writeU32 } from '../../activities/servlets/memory-cap';
import { compileServlet, contentAddress } from '../../activities/servlets/module';
import { getStack } from '../helpers/stack';
import { buildTestServlets, compileWat as wat } from '../helpers/servlets';

/** The memory maximum a module ends up with, read back through an instance. */
async function grownTo(bytes: Uint8Array, pages: number): Promise<number> {
  const wasm = (globalThis as any).WebAssembly;
  const { instance } = await wasm.instantiate(capMemory(bytes, 4));
  return instance.exports.grow(pages);
}

describe('servlet modules', () => {
  describe('memory cap', () => {
    const exporter = (memory: string) =>
      wat(`(module (memory ${memory}) (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0))))`);

    it('stops memory.grow at the cap when the module declares no maximum', async () => {
      const bytes = await exporter('1');
      expect(await grownTo(bytes, 3)).to.equal(1);
      expect(await grownTo(bytes, 4)).to.equal(-1);
    });

    it('lowers a larger declared maximum to the cap and keeps a smaller one', async () => {
      expect(await grownTo(await exporter('1 65536'), 4)).to.equal(-1);
      expect(await grownTo(await exporter('1 2'), 2)).to.equal(-1);
      expect(await grownTo(await exporter('1 2'), 1)).to.equal(1);
    });

    it('refuses a module that needs more memory at start than the cap', async () => {
      expect(() => capMemory(new Uint8Array(0), 4)).to.throw(/not a WebAssembly module/);
      await exporter('5').then((bytes) => expect(() => capMemory(bytes, 4)).to.throw(/over the limit/));
    });

    it('round-trips LEB128 numbers', () => {
      for (const n of [0, 1, 127, 128, 16_384, 65_536, 2 ** 32 - 1]) expect(readU32(writeU32(n), 0)).to.deep.equal([n, writeU32(n).length]);
    });
  });

  it('addresses content by the sha256 of its bytes', () => {
    expect(contentAddress(Buffer.from('abc'))).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('refuses a module that imports its memory', async () => {
    const bytes = await wat('(module (import "env" "memory" (memory 1)) (func (export "describe")) (func (export "call")))');
    await compileServlet(bytes, 64).then(
      () => expect.fail('should refuse'),
      (err: Error) => expect(err.message).to.contain('imports its memory'),
    );
  });

  describe('describe', () => {
    let runtime: ServletRuntime;
    before(() => {
      const { logger } = getStack();
      runtime = createServletRuntime({ config: getStack().configWith({ SERVLET_CALL_TIMEOUT_MS: '1000' }), logger });
    });
    after(() => runtime.close());

    async function refusal(bytes: Uint8Array): Promise<ServletError> {
      try {
        await runtime.describe(bytes);
      } catch (err) {
        expect(err).to.be.instanceOf(ServletError);
        return err as ServletError;
      }
      return expect.fail('describe should refuse this module');
    }

    it("lists a servlet's tools", async () => {
      const { greeter } = await buildTestServlets();
      expect(await runtime.describe(greeter)).to.deep.equal({
        tools: [
          {
            name: 'greet',
            description: 'Greets someone by name',
            inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          },
        ],
      });
    });

    it('names why a module is unusable: not WebAssembly, no call export, describe fails, describe answers bad JSON', async () => {
      const s = await buildTestServlets();
      expect((await refusal(s['not-wasm'])).message).to.match(/^module does not compile: not a WebAssembly module/);
      expect((await refusal(s['no-call-export'])).message).to.match(/^module does not export "call"/);
      expect((await refusal(s['describe-fails'])).message).to.equal('servlet describe failed: describe is broken on purpose');
      expect((await refusal(s['describe-bad-json'])).message).to.match(/^describe returned invalid JSON/);
    });

    it('names a module that does not compile, and one that cannot start', async () => {
      const truncated = (await buildTestServlets()).greeter.subarray(0, 100);
      expect((await refusal(truncated)).message).to.match(/^module does not compile/);
      const badImport = await wat('(module (import "env" "nope" (func)) (func (export "describe")) (func (export "call")))');
      expect((await refusal(badImport)).message).to.match(/^servlet could not start: .*cannot resolve import "env" "nope"/);
      const trapsAtStart = await wat('(module (func $s unreachable) (start $s) (func (export "describe")) (func (export "call")))');
      expect((await refusal(trapsAtStart)).message).to.match(/^servlet could not start: .*unreachable/);
    });

    it('refuses tools without an input schema or with names providers reject', async () => {
      const describing = (json: string) =>
        wat(`(module ;; @prelude
          (func (export "describe") (result i32)
            (call $out_begin) (call $emit (string "${json.replace(/"/g, '\\"')}")) (call $out_end) (i32.const 0))
          (func (export "call") (result i32) (i32.const 0)))`);
      expect((await refusal(await describing('{"tools":[{"name":"x"}]}'))).message).to.match(/tools\.0\.inputSchema/);
      expect((await refusal(await describing('{"tools":[{"name":"no spaces","inputSchema":{}}]}'))).message).to.match(/tools\.0\.name/);
      expect((await refusal(await describing('{"tools":[{"name":"a","inputSchema":{}},{"name":"a","inputSchema":{}}]}'))).message).to.contain('used twice');
    });
  });
});
