import { Schema, type Connection, type InferSchemaType, type Types } from 'mongoose';

/**
 * Every collection, registered on one connection. Only what both MongoDB and FerretDB support: plain unique
 * indexes, no TTL/partial indexes, no transactions, no positional updates.
 */

const sealed = { kid: String, iv: String, tag: String, data: String };
const opts = { versionKey: false } as const;

const user = new Schema(
  {
    username: { type: String, required: true, unique: true },
    emails: { type: [{ email: String, primary: Boolean, verified: Boolean, _id: false }], default: [] },
    /** The user's share of the task queue beside other users' (store/user-weights.ts; docs/fairness.md); absent: 1. */
    fairness_weight: { type: Number, default: 1 },
    created_at: { type: Date, required: true },
  },
  opts,
);

const session = new Schema(
  {
    /** sha256 of the session id (FerretDB finds documents by _id without scanning the collection). */
    _id: { type: String, required: true },
    /** The same sha256: the session id itself is never stored. */
    hash: { type: String, required: true, unique: true },
    /** A short prefix shown in listings so a user can tell sessions apart. */
    hint: { type: String, required: true },
    username: { type: String, required: true, index: true },
    created_at: { type: Date, required: true },
    expires_at: { type: Date, required: true },
    revoked_at: { type: Date, default: null },
  },
  opts,
);

/**
 * A one-time sign-in link (store/sign-in-links.ts). `_id`: the sha256 of its token, which is never stored; using the
 * link deletes it, and so does making a link once it has expired (no TTL index: FerretDB has none).
 */
const signInLink = new Schema(
  {
    _id: { type: String, required: true },
    username: { type: String, required: true },
    created_at: { type: Date, required: true },
    expires_at: { type: Date, required: true },
  },
  opts,
);

/**
 * An access token (store/tokens.ts): a credential for the task and run routes and the MCP server, limited to some
 * profiles and scopes. Revoking deletes the document.
 */
const token = new Schema(
  {
    /** sha256 of the token (FerretDB finds documents by _id without scanning the collection); the token is never stored. */
    _id: { type: String, required: true },
    username: { type: String, required: true },
    name: { type: String, required: true },
    /** The profiles it may act in; null: every profile of its user. */
    profiles: { type: [String], default: null },
    scopes: { type: [String], required: true },
    created_at: { type: Date, required: true },
    expires_at: { type: Date, required: true },
    /** When it was last accepted, written at most once a minute (store/tokens.ts LAST_USED_RESOLUTION_MS). */
    last_used_at: { type: Date, default: null },
  },
  opts,
);
token.index({ username: 1, name: 1 }, { unique: true });

const profile = new Schema(
  {
    owner: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: '' },
    is_public: { type: Boolean, default: false },
    /** Last uninstall (or cascade) in this profile: the install list's Last-Modified cannot see a deleted document. */
    installs_modified_at: { type: Date, default: null },
    created_at: { type: Date, required: true },
    modified_at: { type: Date, required: true },
  },
  opts,
);
profile.index({ owner: 1, name: 1 }, { unique: true });
profile.index({ is_public: 1 });

const taskFields = {
  runner: { type: String, required: true },
  model: { type: String, required: true },
  prompt: { type: String, required: true },
  max_tokens: { type: Number, default: null },
  /** store/tasks.ts TaskLimits; null: the server's. */
  limits: { type: Schema.Types.Mixed, default: null },
  /** What the task does, for people and for MCP clients (its tool's description); null: none. */
  description: { type: String, default: null },
  /**
   * JSON Schema 2020-12 of its trigger data (its MCP tool's inputSchema) as JSON text: a schema's keys (`$schema`,
   * `$defs`, `$ref`) are not keys a document may hold. null: made from the prompt's placeholders.
   */
  input_schema_json: { type: String, default: null },
  /** Its runs' Temporal priority key, 1 highest to 5 lowest (src/runs/priority.ts); null or absent: 3. */
  priority: { type: Number, default: null },
  key: { type: sealed, default: null },
};

const task = new Schema(
  {
    owner: { type: String, required: true },
    profile: { type: String, required: true },
    name: { type: String, required: true },
    ...taskFields,
    /** Completion webhook (store/webhooks.ts): `{ url, secret: <sealed> }`, or null. Not versioned: runs use the current one. */
    webhook: { type: new Schema({ url: String, secret: sealed }, { _id: false }), default: null },
    /** Bumped on every update; each run keeps the version it started with (task_versions). */
    version: { type: Number, required: true },
    created_at: { type: Date, required: true },
    modified_at: { type: Date, required: true },
  },
  opts,
);
task.index({ owner: 1, profile: 1, name: 1 }, { unique: true });

const taskVersion = new Schema(
  {
    task_id: { type: Schema.Types.ObjectId, required: true },
    version: { type: Number, required: true },
    ...taskFields,
    created_at: { type: Date, required: true },
  },
  opts,
);
taskVersion.index({ task_id: 1, version: 1 }, { unique: true });

/** A replay's settings (src/replays/create.ts): `of` its original's name, `of_id` its _id, the tools' source, the overrides. */
const replaySettings = new Schema(
  {
    of: { type: String, required: true },
    of_id: { type: String, required: true },
    /** The original's created_at: tells it from a later run of its name (the original deleted, the name used again). */
    of_created_at: { type: Date, required: true },
    tools: { type: String, enum: ['recorded', 'live', 'recorded_then_live'], required: true },
    overrides: {
      runner: { type: String },
      model: { type: String },
      prompt: { type: String },
      task_version: { type: Number },
    },
  },
  { _id: false, versionKey: false },
);

const run = new Schema(
  {
    /**
     * The run's identity, the same string as its workflow id (src/temporal/ids.ts): unique by construction, and
     * found without a scan on FerretDB, which scans for any filter but _id.
     */
    _id: { type: String, required: true },
    owner: { type: String, required: true },
    profile: { type: String, required: true },
    task: { type: String, required: true },
    name: { type: String, required: true },
    task_id: { type: Schema.Types.ObjectId, required: true },
    task_version: { type: Number, required: true },
    runner: { type: String, required: true },
    status: { type: String, required: true },
    /** Trigger data as JSON text (FerretDB refuses keys with "." or a leading "$", which a payload may have). */
    payload_json: { type: String, required: true },
    /**
     * The first page of the run's entries (PAGE_SIZE, run-content.ts; later pages are in run_pages), as the workflow
     * last wrote them; large contents are references to run_blobs. A live run's newest entries come from its query.
     */
    results: { type: [Schema.Types.Mixed], default: [] },
    /** Entries written so far, all pages. */
    entry_count: { type: Number, required: true },
    /** Tokens and calls so far (src/contract/types.ts RunUsage), written with the status; absent on older records. */
    usage: { type: Schema.Types.Mixed },
    /** The first page of the conversation with the model (run-content.ts); the provider activity reads it. */
    messages: { type: [Schema.Types.Mixed], default: undefined },
    /**
     * Set by the workflow's first record write. The workflow is the only writer after the API's insert: FerretDB
     * applies concurrent updates of one document as read-modify-write, so two writers would lose each other's fields.
     */
    started: { type: Boolean, default: false },
    /** The versions of its pages past the first that the record has committed (run-content.ts PageVersions). */
    page_versions: { type: Schema.Types.Mixed },
    /** Its place among its owner's live runs (store/live-runs.ts), given back at its close; absent when none was taken. */
    live_slot: { type: Number },
    /** A replay (src/replays/): the run it replays and how; absent on every other run. */
    replay: { type: replaySettings, default: undefined },
    /** The eval that made this replay (its id); absent otherwise. */
    eval: { type: String },
    /** The id of the trace its trigger is in, when the API that recorded it traced (docs/observability.md); absent otherwise. */
    trace_id: { type: String },
    /** The trigger's span in that trace: the run's workflow continues it, whoever starts it (src/telemetry/trace-id.ts). */
    trace_span_id: { type: String },
    created_at: { type: Date, required: true },
    modified_at: { type: Date, required: true },
  },
  opts,
);
run.index({ owner: 1, profile: 1, task: 1, created_at: -1 });

/**
 * A recorded tool result of a replay (src/replays/), copied from its original when the replay was made: `_id`
 * `<replay run _id>#<sha256 of tool and key>#<n>` (found by `_id`, FerretDB without a scan), `key` the call's canonical
 * arguments (RFC 8785), `n` its occurrence among identical calls (0 the first). Deleted with the replay run.
 */
const replayTool = new Schema(
  {
    _id: { type: String, required: true },
    /** The replay run's _id: what deletes these with it. */
    run: { type: String, required: true, index: true },
    tool: { type: String, required: true },
    key: { type: String, required: true },
    n: { type: Number, required: true },
    /** The recorded CallToolResult as JSON text (its contents resolved: nothing refers to the original's store). */
    result_json: { type: String, required: true },
  },
  opts,
);

/**
 * An eval (src/evals/, docs/evals.md): replays of some of a task's runs under variants, checked and scored. `_id` its
 * workflow id (contract/messages.ts evalWorkflowId); `id` the short id its runs' names start with. `items` are fixed
 * when it is made (one per original and variant); their `checks` are written once, when its workflow scores it.
 */
const evalRecord = new Schema(
  {
    _id: { type: String, required: true },
    id: { type: String, required: true },
    owner: { type: String, required: true },
    profile: { type: String, required: true },
    task: { type: String, required: true },
    task_id: { type: Schema.Types.ObjectId, required: true },
    /** The request as validated (variants, tools, checks, concurrency). */
    spec: { type: Schema.Types.Mixed, required: true },
    status: { type: String, required: true },
    /** Why it ended `error`, or who cancelled it. */
    reason: { type: String },
    /** {variant, original (run name), original_id, run (the replay's name), checks?: CheckResult[]} */
    items: { type: [Schema.Types.Mixed], default: [] },
    created_at: { type: Date, required: true },
    modified_at: { type: Date, required: true },
  },
  opts,
);
evalRecord.index({ owner: 1, profile: 1, task: 1, created_at: -1 });

/** The counter of a run's replay names (`<run>.r<n>`): `_id` the original run's _id. */
const replayCounter = new Schema(
  {
    _id: { type: String, required: true },
    n: { type: Number, required: true },
  },
  opts,
);

/** Pages of a run's entries (`e`) and messages (`m`) after the first, which its record holds: `<run _id>#p<n>`. */
const runPage = new Schema(
  {
    _id: { type: String, required: true },
    /** The run's _id: what deletes its pages with it. */
    run: { type: String, required: true, index: true },
    e: { type: Schema.Types.Mixed },
    m: { type: Schema.Types.Mixed },
  },
  opts,
);

/**
 * A run's end, claimed before it is written to the record (runs.ts claimRunEnd): `_id` `<run _id>@<created_at ms>`.
 * Its unique `_id` makes the first end of a run the only one, on FerretDB too, whose updates of one document are not
 * atomic with their filters; `set` (BSON) is the record's update, which anyone finding the claim may apply.
 */
const runEnd = new Schema(
  {
    _id: { type: String, required: true },
    run: { type: String, required: true, index: true },
    set: { type: Buffer, required: true },
    at: { type: Date, required: true },
  },
  opts,
);

/** Large texts of a run (prompts, answers, tool results), in parts: `<ref>@<part>`. */
const runBlob = new Schema(
  {
    _id: { type: String, required: true },
    run: { type: String, required: true, index: true },
    data: { type: String, required: true },
  },
  opts,
);

/** A place among a user's live runs (store/live-runs.ts), or among its started ones (runs/admission.ts): `_id` `<owner>:<slot>`. */
const place = () =>
  new Schema(
    {
      _id: { type: String, required: true },
      owner: { type: String, required: true },
      /** The run holding it. */
      run: { type: String, required: true },
      at: { type: Date, required: true },
    },
    opts,
  );
const liveRun = place();
liveRun.index({ owner: 1, at: 1 });
/** A run gives its started place back by its own name (it does not keep the slot): searched by `run`, FerretDB too. */
const startedRun = place();
startedRun.index({ run: 1 });

/**
 * A run waiting for a place among its owner's started runs (runs/admission.ts): `_id` the run's _id. `key`
 * `<owner>/<priority>`: an owner's waiting runs of one priority, oldest first (the index's order); both indexes are
 * searched on FerretDB too; `lease`: a process starting it holds it until then.
 */
const waitingStart = new Schema(
  {
    _id: { type: String, required: true },
    owner: { type: String, required: true },
    key: { type: String, required: true },
    /** What started it (its priority: runs/priority.ts). */
    origin: { type: String, required: true },
    /** The task queue its trigger would have started it on. */
    queue: { type: String, required: true },
    /** The owner's started places it waits for (its trigger's STARTED_RUNS_PER_USER). */
    limit: { type: Number, required: true },
    at: { type: Date, required: true },
    lease: { type: Date, required: true },
  },
  opts,
);
waitingStart.index({ key: 1 });
waitingStart.index({ owner: 1 });

/**
 * The answer text of a live run's model call so far (store/run-text.ts), written only while someone follows the run.
 * `_id`: the run's _id; `call`: the provider call attempt (activity id + attempt), so a retried call is told apart.
 */
const runText = new Schema(
  {
    _id: { type: String, required: true },
    call: { type: String, required: true },
    text: { type: String, default: '' },
    seq: { type: Number, required: true },
    at: { type: Date, required: true },
  },
  opts,
);

/** Who follows a run (store/run-text.ts): a stream of the run is open somewhere until `until`. `_id`: the run's _id. */
const runFollow = new Schema(
  {
    _id: { type: String, required: true },
    until: { type: Date, required: true },
  },
  opts,
);

/** Runs whose workflow start failed (Temporal did not answer): the reconciler starts them. `_id`: the run's _id. */
const deferredStart = new Schema(
  {
    _id: { type: String, required: true },
    /** The task queue it was to start on: the reconciler of that queue starts it. */
    queue: { type: String, required: true },
    at: { type: Date, required: true },
  },
  opts,
);

/**
 * Closed runs whose announcement (webhook delivery, live-run place) failed: the reconciler announces them again
 * (src/runs/announce.ts). `_id`: the run's _id.
 */
const deferredAnnouncement = new Schema(
  {
    _id: { type: String, required: true },
    at: { type: Date, required: true },
  },
  opts,
);

/** Small facts the service keeps about itself, e.g. `reconcile/<task queue>`: where the reconciler stopped. */
const serviceState = new Schema(
  {
    _id: { type: String, required: true },
    at: { type: Date, required: true },
  },
  opts,
);

/** A task's latest webhook delivery attempts (store/webhooks.ts): one document per task, `_id` = the task's _id. */
const webhookDeliveries = new Schema(
  {
    _id: { type: Schema.Types.ObjectId, required: true },
    deliveries: { type: [Schema.Types.Mixed], default: [] },
  },
  opts,
);

/** `_id`: a signed URL's id, or `task:<task _id>` for "every URL of the task issued up to revoked_at". */
const revokedUrl = new Schema(
  {
    _id: { type: String, required: true },
    task_id: { type: Schema.Types.ObjectId, required: true },
    revoked_at: { type: Date, required: true },
  },
  opts,
);

const servlet = new Schema(
  {
    owner: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: '' },
    visibility: { type: String, enum: ['public', 'private'], default: 'private' },
    content_address: { type: String, required: true },
    /** The module's own `describe` answer: `{ tools: [...] }`. */
    schema: { type: Schema.Types.Mixed, required: true },
    /** Name, description and tool names, lower case, one per line: what search matches. */
    search_text: { type: String, default: '' },
    created_at: { type: Date, required: true },
    modified_at: { type: Date, required: true },
  },
  opts,
);
servlet.index({ owner: 1, name: 1 }, { unique: true });
servlet.index({ visibility: 1 });
servlet.index({ content_address: 1 });

const moduleBlob = new Schema(
  {
    content_address: { type: String, required: true, unique: true },
    size: { type: Number, required: true },
    /** The whole module, or its first part when it is larger than one document may be (see module_chunks). */
    data: { type: Buffer, required: true },
    /** Parts in all, this document's included; parts 1.. are in module_chunks. */
    chunks: { type: Number, default: 1 },
    created_at: { type: Date, required: true },
  },
  opts,
);

/** The rest of a module over the 16 MiB document limit (MongoDB and FerretDB alike). */
const moduleChunk = new Schema(
  {
    content_address: { type: String, required: true },
    n: { type: Number, required: true },
    data: { type: Buffer, required: true },
  },
  opts,
);
moduleChunk.index({ content_address: 1, n: 1 }, { unique: true });

/**
 * What an MCP install (store/mcp-installs.ts) connects to and what the server listed. The URL is kept twice: `url`
 * as shown (no user info, query or fragment, which may carry secrets) and `url_sealed`, the whole URL, sealed like
 * provider keys; header values are sealed JSON, their names plain.
 */
const mcpServer = new Schema(
  {
    url: { type: String, required: true },
    url_sealed: { type: sealed, required: true },
    header_names: { type: [String], default: [] },
    /** `{ <name>: <value> }` sealed, or null when there are none. */
    headers: { type: sealed, default: null },
    /**
     * OAuth client credentials (docs/mcp.md), or null: what is shown (`token_url` without its secret parts, `client_id`,
     * `scope`, `auth`) and `secret`, sealed JSON `{ token_url?, client_secret?, private_key? }`.
     */
    oauth: {
      type: new Schema(
        {
          token_url: { type: String, default: null },
          client_id: { type: String, required: true },
          scope: { type: String, default: null },
          auth: { type: String, enum: ['client_secret', 'private_key'], required: true },
          secret: { type: sealed, required: true },
        },
        { _id: false },
      ),
      default: null,
    },
    /** The server's `tools/list` (every page), as stored by mcp-installs.ts, keys FerretDB-safe (document-keys.ts). */
    tools: { type: [Schema.Types.Mixed], default: [] },
    /** `{ serverInfo, protocolVersion }` from its initialize answer. */
    server: { type: Schema.Types.Mixed, default: null },
    listed_at: { type: Date, required: true },
  },
  { _id: false },
);

const installation = new Schema(
  {
    owner: { type: String, required: true },
    profile: { type: String, required: true },
    name: { type: String, required: true },
    /** The servlet installed; null for an MCP install. */
    servlet_owner: { type: String, default: null },
    servlet_name: { type: String, default: null },
    /** The MCP server installed; null for a servlet install. */
    mcp: { type: mcpServer, default: null },
    /** MCP installs: the tools offered to runs (null: every tool the server lists). */
    allowed_tools: { type: [String], default: null },
    /** Install configuration (may hold API keys): sealed JSON. */
    config: { type: sealed, default: null },
    /** null = every host outside the blocklist; [] = no network; else host globs. */
    domains: { type: [String], default: null },
    /**
     * null = no tool needs approval; "*" = every tool; else the tool names (store/installations.ts). MCP installs
     * also take "none" and "destructive" (their default, stored as such: store/mcp-installs.ts).
     */
    approval: { type: Schema.Types.Mixed, default: null },
    /** MCP installs: the server may ask the run's model for an answer during a call (docs/mcp.md, "Sampling"). */
    sampling: { type: Boolean, default: false },
    created_at: { type: Date, required: true },
    modified_at: { type: Date, required: true },
  },
  opts,
);
installation.index({ owner: 1, profile: 1, name: 1 }, { unique: true });
installation.index({ servlet_owner: 1, servlet_name: 1 });

/**
 * A task's schedules (store/schedules.ts): one document per place, `_id` `<owner>/<profile>/<task>:<slot>` with `slot`
 * in [0, the most a task may have): the unique `_id` is the count, on MongoDB as on FerretDB.
 */
const taskSchedule = new Schema(
  {
    _id: { type: String, required: true },
    /** The schedule holding the place. */
    name: { type: String, required: true },
    at: { type: Date, required: true },
  },
  opts,
);

/** Request counts of the rate limits (http/rate-limits.ts): rate-limiter-flexible's Mongo store, one per key. */
const rateLimit = new Schema(
  {
    key: { type: String, required: true },
    points: { type: Number, required: true },
    expire: { type: Date, default: null },
  },
  opts,
);
rateLimit.index({ key: 1 }, { unique: true });

/**
 * Runs started as MCP tasks (src/mcp-server/): the task id a client holds, the user it is bound to, and the run.
 * `_id` is an HMAC of the owner and the run's workflow id (mcp-tasks.ts `mcpTaskId`): a retried call maps to the same.
 */
const mcpTask = new Schema(
  {
    _id: { type: String, required: true },
    owner: { type: String, required: true },
    profile: { type: String, required: true },
    task: { type: String, required: true },
    run: { type: String, required: true },
    created_at: { type: Date, required: true },
  },
  opts,
);
mcpTask.index({ owner: 1, created_at: -1 });

export function registerModels(conn: Connection) {
  return {
    User: conn.model('User', user, 'users'),
    Session: conn.model('Session', session, 'sessions'),
    Token: conn.model('Token', token, 'tokens'),
    SignInLink: conn.model('SignInLink', signInLink, 'sign_in_links'),
    Profile: conn.model('Profile', profile, 'profiles'),
    Task: conn.model('Task', task, 'tasks'),
    TaskVersion: conn.model('TaskVersion', taskVersion, 'task_versions'),
    Run: conn.model('Run', run, 'runs'),
    RunPage: conn.model('RunPage', runPage, 'run_pages'),
    RunBlob: conn.model('RunBlob', runBlob, 'run_blobs'),
    ReplayTool: conn.model('ReplayTool', replayTool, 'run_replay_tools'),
    ReplayCounter: conn.model('ReplayCounter', replayCounter, 'replay_counters'),
    Eval: conn.model('Eval', evalRecord, 'evals'),
    RunEnd: conn.model('RunEnd', runEnd, 'run_ends'),
    ServiceState: conn.model('ServiceState', serviceState, 'service_state'),
    DeferredStart: conn.model('DeferredStart', deferredStart, 'deferred_starts'),
    DeferredAnnouncement: conn.model('DeferredAnnouncement', deferredAnnouncement, 'deferred_announcements'),
    LiveRun: conn.model('LiveRun', liveRun, 'live_runs'),
    StartedRun: conn.model('StartedRun', startedRun, 'started_runs'),
    WaitingStart: conn.model('WaitingStart', waitingStart, 'waiting_starts'),
    RunText: conn.model('RunText', runText, 'run_texts'),
    RunFollow: conn.model('RunFollow', runFollow, 'run_follows'),
    RevokedUrl: conn.model('RevokedUrl', revokedUrl, 'revoked_urls'),
    RateLimit: conn.model('RateLimit', rateLimit, 'rate_limits'),
    WebhookDeliveries: conn.model('WebhookDeliveries', webhookDeliveries, 'webhook_deliveries'),
    Servlet: conn.model('Servlet', servlet, 'servlets'),
    Module: conn.model('Module', moduleBlob, 'modules'),
    ModuleChunk: conn.model('ModuleChunk', moduleChunk, 'module_chunks'),
    Installation: conn.model('Installation', installation, 'installations'),
    TaskSchedule: conn.model('TaskSchedule', taskSchedule, 'task_schedules'),
    McpTask: conn.model('McpTask', mcpTask, 'mcp_tasks'),
  };
}

export type Models = ReturnType<typeof registerModels>;

/** Documents as stored, derived from their schemas (the store's record types pick from these; none is written by hand). */
export type UserDoc = InferSchemaType<typeof user>;
export type ProfileDoc = InferSchemaType<typeof profile>;
export type TokenDoc = InferSchemaType<typeof token>;
export type InstallationDoc = InferSchemaType<typeof installation> & { _id: Types.ObjectId };
export type RunTextDoc = InferSchemaType<typeof runText>;
export type McpServerDoc = InferSchemaType<typeof mcpServer>;
export type TaskDoc = InferSchemaType<typeof task> & { _id: Types.ObjectId };
export type TaskVersionDoc = InferSchemaType<typeof taskVersion>;
export type ServletDoc = InferSchemaType<typeof servlet>;
export type EvalDoc = InferSchemaType<typeof evalRecord>;
export type ModuleDoc = InferSchemaType<typeof moduleBlob>;
