import crypto from 'node:crypto';

/** Envelope for a secret at rest: AES-256-GCM under the master key named by `kid`. */
export interface SealedSecret {
  kid: string;
  iv: string;
  tag: string;
  data: string;
}

export interface MasterKey {
  id: string;
  key: Buffer;
}

export interface Keyring {
  current: MasterKey;
  retired: MasterKey[];
}

export function seal(keyring: Keyring, plaintext: string): SealedSecret {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', keyring.current.key, iv);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { kid: keyring.current.id, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
}

/** Throws when the key id is unknown (retired and dropped from configuration) or the ciphertext was altered. */
export function open(keyring: Keyring, sealed: SealedSecret): string {
  const master = [keyring.current, ...keyring.retired].find((k) => k.id === sealed.kid);
  if (!master) throw new Error(`secret sealed under unknown master key "${sealed.kid}"`);
  const decipher = crypto.createDecipheriv('aes-256-gcm', master.key, Buffer.from(sealed.iv, 'base64'));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
}

/** Seal a JSON value (servlet install configuration). */
export const sealJson = (keyring: Keyring, value: unknown) => seal(keyring, JSON.stringify(value));
export const openJson = <T>(keyring: Keyring, sealed: SealedSecret): T => JSON.parse(open(keyring, sealed)) as T;

export function keyringFromConfig(config: { MASTER_KEY: MasterKey; MASTER_KEYS_RETIRED: MasterKey[] }): Keyring {
  return { current: config.MASTER_KEY, retired: config.MASTER_KEYS_RETIRED };
}

export const sha256 = (value: string | Buffer) => crypto.createHash('sha256').update(value).digest('hex');
