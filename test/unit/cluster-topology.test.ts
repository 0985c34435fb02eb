import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { ConfigError, loadClusterConfig } from '../../src/config';
import { DYNAMIC_CONFIG_FILE, serverConfigFile, writeServerConfig } from '../../src/cli/cluster-temporal';
import { clusterPorts } from '../../src/cli/cluster-topology';

const repo = path.join(__dirname, '../..');
const compose = parse(fs.readFileSync(path.join(repo, 'docker-compose.yml'), 'utf8'), { merge: true });

describe('the cluster topology (npm run stack:cluster) beside docker-compose.yml', () => {
  it('builds the Temporal server version the compose file runs', () => {
    const script = fs.readFileSync(path.join(repo, 'scripts/install-tools.sh'), 'utf8');
    const built = /^TEMPORAL_SERVER_VERSION=(\S+)$/m.exec(script)?.[1];
    expect(compose.services.temporal.image).to.equal(`temporalio/auto-setup:${built}`);
    expect(compose.services['temporal-setup'].image).to.equal(`temporalio/admin-tools:${built}`);
  });

  it('gives its Temporal server the dynamic config file the compose file mounts', () => {
    const mounted = (compose.services.temporal.volumes as string[]).map((v) => path.resolve(repo, v.split(':')[0]!));
    expect(mounted).to.include(DYNAMIC_CONFIG_FILE);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-cluster-config-'));
    try {
      writeServerConfig(dir, { ports: clusterPorts(18000), sql: { port: 18004, user: 'ptr', password: 'pw' } });
      const file = serverConfigFile(dir);
      expect(fs.statSync(file).mode & 0o777, 'the file holds the database password').to.equal(0o600);
      const config = parse(fs.readFileSync(file, 'utf8'));
      expect(config.dynamicConfigClient.filepath).to.equal(DYNAMIC_CONFIG_FILE);
      expect(config.persistence.visibilityStore).to.equal('postgres-visibility');
      expect(config.persistence.datastores['postgres-visibility'].sql.pluginName).to.equal('postgres12');
      expect(config.services.frontend.rpc.grpcPort).to.equal(18006);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lays its 17 ports out without overlap from CLUSTER_BASE_PORT, the Web UI last (outside the smallint bound)', () => {
    const ports = Object.values(clusterPorts(18000));
    expect(new Set(ports).size).to.equal(17);
    expect(Math.min(...ports)).to.equal(18000);
    expect(Math.max(...ports)).to.equal(18016);
    expect(clusterPorts(18000).temporalUi).to.equal(18016);
  });

  it('refuses a CLUSTER_BASE_PORT whose membership ports Temporal could not store', () => {
    expect(() => loadClusterConfig({ CLUSTER_BASE_PORT: '40000' })).to.throw(ConfigError, /CLUSTER_BASE_PORT/);
    expect(loadClusterConfig({ CLUSTER_BASE_PORT: '32752' }).CLUSTER_BASE_PORT).to.equal(32752);
  });
});
