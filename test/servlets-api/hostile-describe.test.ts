import { expect } from 'chai';
import { readResponse, startApi, type ApiResponse } from '../helpers/api';
import { buildTestServlets, compileWat } from '../helpers/servlets';
import { libraryUser } from './library';

/**
 * A publish runs the module's `describe` in the API process (docs/servlets.md, "Where describe runs"): on a worker
 * thread, under the call time limit and the memory cap. A hostile module must cost its publish a 400 and nothing
 * more: the API keeps answering everyone else meanwhile.
 */
describe('servlet library: a hostile describe at publish', function () {
  // three describes that each run until the time limit, on a shared machine
  this.timeout(60_000);
  const TIME_LIMIT_MS = 3_000;
  /**
   * Health checks answered, one after another, while both looping describes run (their time limit long): a main
   * thread that ran a describe would answer one or two at most, all after it (no wall-clock bound: counted, not
   * timed). A busy machine answers fewer within the describes' fixed time limit (10 seen during a full suite on a
   * loaded machine, 17 under lighter load, 30 and more on a quiet one).
   */
  const HEALTH_ANSWERS = 6;
  let server: Awaited<ReturnType<typeof startApi>>;
  before(async () => {
    server = await startApi({ SERVLET_CALL_TIMEOUT_MS: String(TIME_LIMIT_MS) });
  });
  after(() => server?.close());

  const hostile = {
    /** describe never returns */
    'describe-loops': `(module ;; @prelude
      (func (export "describe") (result i32) (loop $forever (br $forever)) (i32.const 0))
      (func (export "call") (result i32) (i32.const 0)))`,
    /** describe takes memory 1 MiB at a time, touching every page, until memory.grow refuses (the cap) */
    'describe-hogs': `(module ;; @prelude
      (func (export "describe") (result i32)
        (local $page i32)
        (loop $more
          (local.set $page (memory.grow (i32.const 16)))
          (if (i32.eq (local.get $page) (i32.const -1)) (then (return (call $fail (string "memory.grow refused: at the cap")))))
          (i32.store (i32.mul (local.get $page) (i32.const 65536)) (i32.const 1))
          (br $more))
        (i32.const 0))
      (func (export "call") (result i32) (i32.const 0)))`,
    /** the module's start function never returns: the plugin never finishes starting */
    'start-loops': `(module
      (func $start (loop $forever (br $forever)))
      (start $start)
      (memory (export "memory") 1)
      (func (export "describe") (result i32) (i32.const 0))
      (func (export "call") (result i32) (i32.const 0)))`,
  };

  it('answers the publish 400 invalid_module, and the API answers other requests while the describe runs', async () => {
    const me = await libraryUser('hostile', server.url);
    const modules = await Promise.all(Object.values(hostile).map((source) => compileWat(source)));
    const running = new Set(Object.keys(hostile));
    const publishes = Object.keys(hostile).map((name, i) => me.putModule(name, modules[i]!).finally(() => running.delete(name)));
    // The two that loop hold their describe until the time limit (the hog is stopped sooner, by the memory cap).
    const looping = () => running.has('describe-loops') && running.has('start-loops');

    // Requests sent one after another for as long as any publish runs; only answers that arrive while both looping
    // describes are still running count. A health check's time is taken from its request to its answer.
    const healthMs: number[] = [];
    while (running.size > 0) {
      const sent = performance.now();
      const [healthz, own] = await Promise.all([
        fetch(`${server.url}/healthz`)
          .then(readResponse)
          .then((res) => ({ res, ms: performance.now() - sent })),
        me.api.get('/api/servlets/~'),
      ]);
      expect(healthz.res.status).to.equal(200);
      expect(own.status).to.equal(200);
      if (looping()) healthMs.push(healthz.ms);
    }
    const answers: ApiResponse[] = await Promise.all(publishes);

    // The describes run off the API's main thread: it keeps answering meanwhile.
    // Each health check went with a session read (its servlets), answered 200 too.
    expect(healthMs.length, `health checks and session reads answered while every describe ran (${healthMs.map(Math.round).join(', ')} ms)`).to.be.at.least(HEALTH_ANSWERS);
    const [loops, hogs, startLoops] = answers as [ApiResponse, ApiResponse, ApiResponse];
    for (const res of answers) {
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_module');
    }
    expect(loops.body.error.message).to.equal(`module: servlet describe timed out after ${TIME_LIMIT_MS} ms`);
    expect(hogs.body.error.message).to.equal('module: servlet describe failed: memory.grow refused: at the cap');
    expect(startLoops.body.error.message).to.equal(`module: servlet could not start within ${TIME_LIMIT_MS} ms (its start-up code may loop)`);
    expect((await me.api.get('/api/servlets/~')).body, 'nothing was stored').to.deep.equal([]);

    // The describes' threads and places were given back: a good module publishes at once.
    const { greeter } = await buildTestServlets();
    expect((await me.putModule('greeter', greeter)).status).to.equal(201);
  });
});
