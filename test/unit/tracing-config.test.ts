import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config';
import { tracingSettings } from '../../src/telemetry/settings';

const minimal = {
  MONGO_URL: 'mongodb://127.0.0.1:27017/x',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  MASTER_KEY: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
  SIGNING_SECRET: 'x'.repeat(32),
};

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...minimal, ...env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('tracing configuration (OTEL_*)', () => {
  it('is off when no OTLP endpoint is set, whatever else is', () => {
    const c = loadConfig({ ...minimal, OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_ENDPOINT: '  ' });
    expect(tracingSettings(c, 'api')).to.equal(undefined);
    expect(c.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).to.equal(false);
  });

  it('sends to <endpoint>/v1/traces over http/protobuf by default, named by the process', () => {
    const c = loadConfig({ ...minimal, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' });
    expect(tracingSettings(c, 'api')).to.deep.equal({ url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf', headers: {}, serviceName: 'prompt-task-runner-api' });
    expect(tracingSettings(c, 'worker')?.serviceName).to.equal('prompt-task-runner-worker');
  });

  it("takes the traces' own endpoint as it is and their own protocol over the general ones", () => {
    const c = loadConfig({
      ...minimal,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'runner',
    });
    expect(tracingSettings(c, 'worker')).to.include({ url: 'https://traces.example/otlp/traces', protocol: 'http/json', serviceName: 'runner' });
  });

  it('reads OTEL_EXPORTER_OTLP_HEADERS as comma-separated name=value pairs with URL-encoded values', () => {
    const c = loadConfig({ ...minimal, OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=abc123, Authorization=Basic%20dXNlcjpwYXNz' });
    expect(c.OTEL_EXPORTER_OTLP_HEADERS).to.deep.equal({ 'x-honeycomb-team': 'abc123', Authorization: 'Basic dXNlcjpwYXNz' });
  });

  it('refuses grpc and unknown protocols, malformed headers and a capture switch other than true or false, naming each', () => {
    const found = problems({
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml',
      OTEL_EXPORTER_OTLP_HEADERS: 'sk-very-secret-key',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'yes',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
    });
    expect(found.map((p) => p.split(':')[0])).to.have.members([
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    ]);
    expect(found.join('\n')).to.include('http/protobuf or http/json');
    // A header's value may be a vendor's key: the problem never repeats it.
    expect(found.join('\n')).not.to.include('sk-very-secret-key');
  });

  it('turns content capture on with true', () => {
    expect(loadConfig({ ...minimal, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }).OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).to.equal(true);
  });
});
