import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { expect } from 'chai';
import { workflowBundle } from '../../src/temporal/worker';
import { replayOptions } from '../helpers/replay';

const DIR = path.join(__dirname, '..', 'fixtures', 'histories');
/** The scenarios test/replay/record-histories.ts records: each must be there, so a lost file fails too. */
const SCENARIOS = ['answer', 'tools', 'retry', 'approvals', 'cancel', 'budget', 'webhook', 'scheduled', 'owner-busy', 'eval'];

/**
 * Histories recorded from real runs (test/replay/record-histories.ts) replayed with today's workflow code, without a
 * server: a change to `workflows/` that would break runs live during a deploy (a nondeterministic change) fails here.
 * `<scenario>.history` were recorded at the house's rewrite (2026-11-27), the last time fixtures were replaced: from
 * then on a change to `workflows/` keeps every file here and adds its own (`<scenario>.<date>.history`), with
 * `patched()` where old histories need the old path, as a deployed service must.
 */
describe('workflow replay: recorded histories still replay', function () {
  this.timeout(120_000);

  // Tracing on (OTEL_EXPORTER_OTLP_ENDPOINT set): the bundle holds the SDK's OpenTelemetry workflow interceptors, and
  // the worker the sink of their spans. A deploy that turns it on replays the runs it finds live.
  for (const traced of [false, true]) {
    it(`replays every recorded run without a nondeterminism error, tracing ${traced ? 'on' : 'off'}`, async () => {
      const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.history'));
      expect(files.map((f) => f.split('.')[0])).to.include.members(SCENARIOS);
      const histories = files.map((f) => ({ workflowId: f, history: temporal.api.history.v1.History.decode(fs.readFileSync(path.join(DIR, f))) }));
      const failures: string[] = [];
      let replayed = 0;
      for await (const result of Worker.runReplayHistories(replayOptions(await workflowBundle({ traced }), traced), histories)) {
        replayed++;
        if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
      }
      expect(failures).to.deep.equal([]);
      expect(replayed).to.equal(files.length);
    });
  }
});
