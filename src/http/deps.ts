import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Db } from '../store/connect';
import type { Keyring } from '../store/secrets';
import type { TokenGrant } from '../store/tokens';

/** What the HTTP layer is built from. Entry points and tests pass real clients. */
export interface AppDeps {
  config: Config;
  logger: Logger;
  db: Db;
  keyring: Keyring;
  temporal: Client;
  /** The process traces (src/telemetry/tracing.ts): each request is a span. */
  traced?: boolean;
}

export interface AuthState {
  /** The user of the session or access token. */
  username: string;
  /** The access token's grant when the request came with one (middleware/auth.ts), else undefined: a session. */
  token?: TokenGrant;
}
